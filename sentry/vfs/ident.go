package vfs

// FileID names the inode an open file is of, whatever the path or file
// system it was reached through: its device and inode number, which stay
// the same for a file's life (across an overlay's copy-up too), so that two
// opens of one file, or of two hard links to it, find the same locks and
// watches. A file whose attributes cannot be read is an inode of its own.
type FileID struct {
	Dev, Ino uint64
	file     *File // set only for a file with no readable identity
}

// ID returns the identity of f's inode, read once: the inode its path
// names (a FIFO's, not its pipe's), else the open file's own.
func (f *File) ID() FileID {
	f.idOnce.Do(func() {
		if d := f.path.Dentry; d != nil {
			if id, ok := inodeID(d.inode); ok {
				f.id = id
				return
			}
		}
		st, err := f.impl.Stat()
		if err != nil {
			f.id = FileID{file: f}
			return
		}
		f.id = FileID{Dev: st.Dev, Ino: st.Ino}
	})
	return f.id
}

// inodeID returns the identity of an inode reached by a path.
func inodeID(ino Inode) (FileID, bool) {
	st, err := ino.Stat()
	if err != nil {
		return FileID{}, false
	}
	return FileID{Dev: st.Dev, Ino: st.Ino}, true
}
