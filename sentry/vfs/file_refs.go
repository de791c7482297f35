package vfs

// Refs returns how many references f has: the collector of AF_UNIX
// sockets that only messages in flight hold (Linux's unix_gc) compares it
// with the references those messages account for.
func (f *File) Refs() int64 { return f.refs.Load() }
