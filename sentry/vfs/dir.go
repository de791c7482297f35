package vfs

import "golang.org/x/sys/unix"

// dirState is a directory listing that getdents64 hands out in pieces. The
// file offset is an index into it. It is read when the offset is 0, so
// rewinding (lseek to 0) sees changes, as on Linux.
type dirState struct {
	entries []Dirent
}

func (d *dirState) restart(off int64) {
	if off == 0 {
		d.entries = nil
	}
}

// IterDirents calls fn with each directory entry from the file offset on,
// "." and ".." first, with the offset of the entry that follows; it stops
// when fn returns false, and the offset then names the entry fn refused.
func (f *File) IterDirents(root Path, fn func(d Dirent, next int64) bool) (err error) {
	if f.dir == nil {
		return unix.ENOTDIR
	}
	defer func() {
		if err == nil {
			f.notify(unix.IN_ACCESS) // after f.mu, as Linux's iterate_dir
		}
	}()
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.path.Dentry.Deleted() {
		return unix.ENOENT // removed: Linux's IS_DEADDIR, whatever the file system
	}
	if f.off == 0 || f.dir.entries == nil {
		list, err := f.path.Dentry.inode.ReadDir()
		if err != nil {
			return err
		}
		self, err := f.path.Dentry.inode.Stat()
		if err != nil {
			return err
		}
		parent := parentOf(f.path, root)
		up, err := parent.Dentry.inode.Stat()
		if err != nil {
			return err
		}
		f.dir.entries = append([]Dirent{
			{Name: ".", Ino: self.Ino, Type: unix.DT_DIR},
			{Name: "..", Ino: up.Ino, Type: unix.DT_DIR},
		}, list...)
		f.dir.entries = append(f.dir.entries, f.path.Dentry.madeEntries()...)
	}
	for f.off >= 0 && f.off < int64(len(f.dir.entries)) {
		if !fn(f.dir.entries[f.off], f.off+1) {
			break
		}
		f.off++
	}
	return nil
}
