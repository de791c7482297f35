package vfs

import (
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// FileImpl is what a file system provides for an open file. Offsets are
// managed by File; a FileImpl that is not seekable ignores off.
type FileImpl interface {
	Read(dst *IOSeq, off int64) (int, error)
	Write(src *IOSeq, off int64) (int, error)
	Stat() (Stat, error)
	// Ioctl answers ioctl(2); most files answer ENOTTY.
	Ioctl(cmd uint32, arg uintptr, io IoctlIO) (uintptr, error)
	Release()
}

// IoctlIO lets an ioctl read and write the guest memory its argument
// points to.
type IoctlIO interface {
	CopyIn(addr uintptr, dst []byte) (int, error)
	CopyOut(addr uintptr, src []byte) (int, error)
}

// Seeker is implemented by files whose offset means something: lseek on
// other files gives ESPIPE.
type Seeker interface {
	// Size is the end of the file for SEEK_END.
	Size() (int64, error)
}

// OffsetKeeper is implemented by files whose offset lives outside the
// sentry: a host file description that the container's stdio shares with
// host processes (a shell's `>> log` redirection), whose offset both sides
// must move. Read and Write at CurrentOffset use and advance that offset.
type OffsetKeeper interface {
	Seeker
	Seek(off int64, whence int) (int64, error)
}

// Unspliceable is implemented by files that splice(2) and sendfile(2)
// cannot read from, Linux's files without a splice_read method (most of
// /proc/<pid>, /proc/net): NoSpliceRead reports it, and those calls fail
// with EINVAL.
type Unspliceable interface {
	NoSpliceRead() bool
}

// SpliceReadable reports whether splice and sendfile may read impl.
func SpliceReadable(impl FileImpl) bool {
	u, ok := impl.(Unspliceable)
	return !ok || !u.NoSpliceRead()
}

// Syncer is implemented by files whose data lives elsewhere (a host
// file): Sync is fsync(2), the data and what it needs reaching stable
// storage there.
type Syncer interface {
	Sync() error
}

// CurrentOffset, as the offset of an OffsetKeeper's Read or Write, means the
// file's own offset.
const CurrentOffset = -1

// File is an open file description: shared by every fd that dup or fork
// makes from one open.
type File struct {
	refs  atomic.Int64
	impl  FileImpl
	path  Path
	flags atomic.Uint32 // O_ACCMODE and the status flags (O_APPEND, O_NONBLOCK, ...)

	mu  sync.Mutex // serialises offset updates, as Linux's f_pos_lock
	off int64

	dir *dirState // for directories: the entries getdents64 hands out

	idOnce sync.Once
	id     FileID // the inode's identity, for locks and watches (ident.go)
	// locked says the description took a flock or OFD lock, which its
	// last close drops.
	locked atomic.Bool
	// landlockDenied holds the rights the opener's Landlock domain denied
	// on the file that calls on the open file need later (TRUNCATE, for
	// ftruncate): set once, before the file is shared.
	landlockDenied uint64
}

// NewFile returns a File with one reference.
func NewFile(impl FileImpl, path Path, flags int) *File {
	f := &File{impl: impl, path: path}
	if path.Dentry != nil && path.Dentry.isDir {
		f.dir = &dirState{}
	}
	f.flags.Store(uint32(flags))
	f.refs.Store(1)
	f.opened()
	return f
}

// SetLandlockDenied records what LandlockDomain.LandlockOpen said the
// file may not do later; called before the file is installed.
func (f *File) SetLandlockDenied(rights uint64) { f.landlockDenied = rights }

// Impl returns the file system's side of the file.
func (f *File) Impl() FileImpl { return f.impl }

// Path returns where the file was opened.
func (f *File) Path() Path { return f.path }

// Flags returns the access mode and status flags.
func (f *File) Flags() int { return int(f.flags.Load()) }

// SetStatusFlags replaces the flags fcntl(F_SETFL) may change.
func (f *File) SetStatusFlags(flags int) {
	const settable = unix.O_APPEND | unix.O_NONBLOCK | unix.O_ASYNC | unix.O_DIRECT | unix.O_NOATIME
	for {
		old := f.flags.Load()
		nu := old&^settable | uint32(flags&settable)
		if f.flags.CompareAndSwap(old, nu) {
			return
		}
	}
}

// IncRef adds a reference.
func (f *File) IncRef() { f.refs.Add(1) }

// DecRef drops a reference, releasing the file with the last.
func (f *File) DecRef() {
	if f.refs.Add(-1) == 0 {
		f.closed()
		if f.locked.Load() {
			Locks.ReleaseFile(f)
		}
		f.impl.Release()
	}
}

// Readable and Writable report the access mode.
func (f *File) Readable() bool { return f.Flags()&unix.O_ACCMODE != unix.O_WRONLY }
func (f *File) Writable() bool { return f.Flags()&unix.O_ACCMODE != unix.O_RDONLY }

// Read reads at the file offset and advances it (read(2), readv(2)).
func (f *File) Read(dst *IOSeq) (int, error) {
	n, err := f.read(dst)
	if n > 0 {
		f.notify(unix.IN_ACCESS)
	}
	return n, err
}

func (f *File) read(dst *IOSeq) (int, error) {
	if !f.Readable() {
		return 0, unix.EBADF
	}
	if f.path.Dentry != nil && f.path.Dentry.isDir {
		return 0, unix.EISDIR
	}
	dst.nonblock = f.Flags()&unix.O_NONBLOCK != 0
	if _, seekable := f.impl.(Seeker); !seekable {
		// No offset to keep: a read that blocks (a pipe) must not hold
		// the lock that a write to the same file description needs.
		return f.impl.Read(dst, 0)
	}
	if _, ok := f.impl.(OffsetKeeper); ok {
		return f.impl.Read(dst, CurrentOffset)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if endOverflows(f.off, dst) {
		return 0, unix.EINVAL
	}
	n, err := f.impl.Read(dst, f.off)
	f.off += int64(n)
	return n, err
}

// endOverflows is Linux's rw_verify_area for a file whose offsets are
// signed (all of these): a transfer at off whose end would pass 2^63-1 is
// EINVAL, a read as much as a write. Without it a write at the largest
// offset moved the offset past it, to a negative one, which a later read
// indexed with.
func endOverflows(off int64, s *IOSeq) bool { return off+int64(s.Len()) < 0 }

// Pread reads at off without moving the file offset.
func (f *File) Pread(dst *IOSeq, off int64) (int, error) {
	if !f.Readable() {
		return 0, unix.EBADF
	}
	if f.path.Dentry != nil && f.path.Dentry.isDir {
		return 0, unix.EISDIR
	}
	if _, ok := f.impl.(Seeker); !ok {
		return 0, unix.ESPIPE
	}
	if off < 0 || endOverflows(off, dst) {
		return 0, unix.EINVAL
	}
	n, err := f.impl.Read(dst, off)
	if n > 0 {
		f.notify(unix.IN_ACCESS)
	}
	return n, err
}

// AppendMode says whether a write lands at the end of the file: as its
// O_APPEND says, or as pwritev2's RWF_APPEND or RWF_NOAPPEND says for that
// one call.
type AppendMode int

// Append modes.
const (
	AppendIfOpened AppendMode = iota // O_APPEND decides
	AppendAlways                     // RWF_APPEND
	AppendNever                      // RWF_NOAPPEND
)

func (m AppendMode) appends(flags int) bool {
	return m == AppendAlways || m == AppendIfOpened && flags&unix.O_APPEND != 0
}

// Write writes at the file offset (the end with O_APPEND) and advances it.
func (f *File) Write(src *IOSeq) (int, error) { return f.WriteAppend(src, AppendIfOpened) }

// WriteAppend is Write with where it lands set by mode.
func (f *File) WriteAppend(src *IOSeq, mode AppendMode) (int, error) {
	n, err := f.write(src, mode)
	if n > 0 {
		f.notify(unix.IN_MODIFY)
	}
	return n, err
}

func (f *File) write(src *IOSeq, mode AppendMode) (int, error) {
	if !f.Writable() {
		return 0, unix.EBADF
	}
	src.nonblock = f.Flags()&unix.O_NONBLOCK != 0
	if _, seekable := f.impl.(Seeker); !seekable {
		return f.impl.Write(src, 0)
	}
	if k, ok := f.impl.(OffsetKeeper); ok {
		return f.writeKept(k, src, mode)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if s, ok := f.impl.(Seeker); ok && mode.appends(f.Flags()) {
		size, err := s.Size()
		if err != nil {
			return 0, err
		}
		f.off = size
	}
	if endOverflows(f.off, src) {
		return 0, unix.EINVAL
	}
	src, err := limitFileSize(src, f.off)
	if err != nil {
		return 0, err
	}
	n, err := f.impl.Write(src, f.off)
	f.off += int64(n)
	return n, err
}

// writeKept writes at an OffsetKeeper's own offset; RLIMIT_FSIZE applies at
// where that offset is now (the host's O_APPEND, if set, writes at the end).
func (f *File) writeKept(k OffsetKeeper, src *IOSeq, mode AppendMode) (int, error) {
	off, err := k.Seek(0, unix.SEEK_CUR)
	if err != nil {
		return 0, err
	}
	if mode.appends(f.Flags()) {
		if off, err = k.Size(); err != nil {
			return 0, err
		}
	}
	if src, err = limitFileSize(src, off); err != nil {
		return 0, err
	}
	return f.impl.Write(src, CurrentOffset)
}

// Pwrite writes at off without moving the file offset; with O_APPEND at
// the end, as Linux's pwrite does (its man page's BUGS).
func (f *File) Pwrite(src *IOSeq, off int64) (int, error) {
	return f.PwriteAppend(src, off, AppendIfOpened)
}

// PwriteAppend is Pwrite with where it lands set by mode.
func (f *File) PwriteAppend(src *IOSeq, off int64, mode AppendMode) (int, error) {
	if !f.Writable() {
		return 0, unix.EBADF
	}
	s, ok := f.impl.(Seeker)
	if !ok {
		return 0, unix.ESPIPE
	}
	if off < 0 {
		return 0, unix.EINVAL
	}
	if mode.appends(f.Flags()) {
		size, err := s.Size()
		if err != nil {
			return 0, err
		}
		off = size
	}
	if endOverflows(off, src) {
		return 0, unix.EINVAL
	}
	src, err := limitFileSize(src, off)
	if err != nil {
		return 0, err
	}
	n, err := f.impl.Write(src, off)
	if n > 0 {
		f.notify(unix.IN_MODIFY)
	}
	return n, err
}

// limitFileSize applies RLIMIT_FSIZE to a write at off of a file with an
// offset: past the limit the task gets SIGXFSZ and EFBIG, and a write that
// crosses it is cut there.
func limitFileSize(src *IOSeq, off int64) (*IOSeq, error) {
	ctx := src.Context()
	if ctx == nil {
		return src, nil
	}
	limit := ctx.FileSizeLimit()
	if limit >= 1<<63 || src.Len() == 0 {
		return src, nil
	}
	if uint64(off) >= limit {
		ctx.Signal(int(unix.SIGXFSZ))
		return nil, unix.EFBIG
	}
	if uint64(off)+uint64(src.Len()) > limit {
		return src.Truncated(int(limit - uint64(off))), nil
	}
	return src, nil
}

// Seek implements lseek(2).
func (f *File) Seek(off int64, whence int) (int64, error) {
	s, ok := f.impl.(Seeker)
	if !ok {
		return 0, unix.ESPIPE
	}
	if k, ok := s.(OffsetKeeper); ok {
		return k.Seek(off, whence)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	var base int64
	switch whence {
	case unix.SEEK_SET:
	case unix.SEEK_CUR:
		base = f.off
	case unix.SEEK_END:
		size, err := s.Size()
		if err != nil {
			return 0, err
		}
		base = size
	default:
		return 0, unix.EINVAL
	}
	n := base + off
	if (off > 0 && n < base) || n < 0 {
		return 0, unix.EINVAL
	}
	if f.dir != nil && n != f.off {
		f.dir.restart(n)
	}
	f.off = n
	return n, nil
}

// Offset returns the file offset.
func (f *File) Offset() int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.off
}

// Stat returns the file's attributes.
func (f *File) Stat() (Stat, error) { return f.impl.Stat() }

// Released reports whether every reference to the file is gone (epoll
// drops such files from its interest lists, as Linux does when the last fd
// of a file is closed).
func (f *File) Released() bool { return f.refs.Load() <= 0 }
