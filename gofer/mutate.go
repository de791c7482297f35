package gofer

import (
	"golang.org/x/sys/unix"
)

// Changes to the served tree. Each works on a directory the gofer holds
// open and one checked name in it (the *at calls), so a change lands in
// that directory whatever a guest does to the names above it meanwhile;
// nothing is resolved from a path, and no symlink is ever followed. The
// sentry has checked Linux's permission rules; the gofer checks only what
// keeps the host safe, and gives every new file the owner and mode the
// sentry decided, exactly.

// mutableDir returns the directory node id names, for a change in it.
func (s *session) mutableDir(id NodeID) (*node, error) {
	if s.readonly {
		return nil, unix.EROFS
	}
	dir, err := s.lookup(id)
	if err != nil {
		return nil, err
	}
	if dir.mode&unix.S_IFMT != unix.S_IFDIR {
		return nil, unix.ENOTDIR
	}
	if dir.parent != nil && dir.name == "" {
		return nil, unix.ENOENT // removed: Linux refuses to make names in it
	}
	if s.held >= s.limit {
		return nil, unix.ENFILE
	}
	return dir, nil
}

// ctimeOf returns dir's change time, before a change in it (DirChange).
func ctimeOf(dir *node) (unix.Timespec, error) {
	var st unix.Stat_t
	if err := unix.Fstatat(dir.fd, "", &st, unix.AT_EMPTY_PATH|unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return unix.Timespec{}, err
	}
	return st.Ctim, nil
}

// answerDirChange adds to the answer what the change just made in dir did
// to it, its change time before being before. The change is made whether
// or not dir can be read after it: an unreadable one is told as unknown.
func (s *session) answerDirChange(dir *node, before unix.Timespec) {
	c := DirChange{Before: before}
	var st unix.Stat_t
	if unix.Fstatat(dir.fd, "", &st, unix.AT_EMPTY_PATH|unix.AT_SYMLINK_NOFOLLOW) == nil {
		c.After = attrOf(&st)
	}
	s.out = appendDirChange(s.out, &c)
}

// newNode walks to name, just made in dir, checks it is the file made
// (ident, when the maker holds it open), sets its owner and mode, and
// answers with its node and attributes. Should it fail to walk there or to
// set them, the name is removed again: the call fails whole, as Linux's
// do, where a guest at the gofer's descriptor limit (EMFILE, answered as
// ENFILE: the sandbox's table of files is full, not the guest's) was told
// its mkdir failed and found the directory there.
func (s *session) newNode(dir *node, name string, ident *unix.Stat_t, mode, uid, gid uint32) error {
	fd, err := walkAt(dir.fd, name)
	if err != nil {
		unmake(dir, name, ident)
		if err == unix.EMFILE {
			err = unix.ENFILE
		}
		return err
	}
	var st unix.Stat_t
	if err := unix.Fstatat(fd, "", &st, unix.AT_EMPTY_PATH|unix.AT_SYMLINK_NOFOLLOW); err != nil {
		unix.Close(fd)
		return err
	}
	if ident != nil && (st.Dev != ident.Dev || st.Ino != ident.Ino) {
		unix.Close(fd)
		return unix.ESTALE
	}
	if err := setOwnerMode(fd, &st, mode, uid, gid); err != nil {
		unix.Close(fd)
		unmake(dir, name, &st)
		return err
	}
	child := s.add(dir, name, fd, &st)
	a := attrOf(&st)
	s.out = le.AppendUint64(s.out, uint64(child))
	s.out = appendAttr(s.out, &a)
	return nil
}

// unmake removes name, just made in dir, if it is still the file made
// (ident, when known): what a host process put there since stays.
func unmake(dir *node, name string, ident *unix.Stat_t) {
	var st unix.Stat_t
	if unix.Fstatat(dir.fd, name, &st, unix.AT_SYMLINK_NOFOLLOW) != nil {
		return
	}
	if ident != nil && (st.Dev != ident.Dev || st.Ino != ident.Ino) {
		return
	}
	flags := 0
	if st.Mode&unix.S_IFMT == unix.S_IFDIR {
		flags = unix.AT_REMOVEDIR
	}
	unix.Unlinkat(dir.fd, name, flags)
}

// setOwnerMode gives the file at fd (O_PATH) its owner, then its mode: in
// that order, because a change of owner clears the set-id bits. st is
// updated to match.
func setOwnerMode(fd int, st *unix.Stat_t, mode, uid, gid uint32) error {
	if st.Uid != uid || st.Gid != gid {
		if err := unix.Fchownat(fd, "", int(uid), int(gid), unix.AT_EMPTY_PATH|unix.AT_SYMLINK_NOFOLLOW); err != nil {
			return err
		}
	}
	if st.Mode&unix.S_IFMT != unix.S_IFLNK && st.Mode&0o7777 != mode&0o7777 {
		if err := unix.Fchmodat(fd, "", mode&0o7777, unix.AT_EMPTY_PATH); err != nil {
			return err
		}
	}
	return unix.Fstatat(fd, "", st, unix.AT_EMPTY_PATH|unix.AT_SYMLINK_NOFOLLOW)
}

// create makes a regular file and returns a read-write fd for it, which
// the sentry's open of the new file uses: creat(2) is one round trip.
func (s *session) create(dirID NodeID, mode, uid, gid uint32, name string) (int, error) {
	if err := checkName(name); err != nil {
		return -1, err
	}
	dir, err := s.mutableDir(dirID)
	if err != nil {
		return -1, err
	}
	before, err := ctimeOf(dir)
	if err != nil {
		return -1, err
	}
	// O_EXCL: the name must be new, a symlink there included.
	fd, err := openat2(dir.fd, name, unix.O_CREAT|unix.O_EXCL|unix.O_RDWR|unix.O_NONBLOCK|unix.O_NOCTTY, mode&0o777)
	if err != nil {
		return -1, err
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return -1, err
	}
	if err := s.newNode(dir, name, &st, mode, uid, gid); err != nil {
		unix.Close(fd)
		return -1, err
	}
	s.answerDirChange(dir, before)
	return fd, clearNonblock(fd)
}

// tmpfile makes an unnamed regular file in dir (O_TMPFILE), to be named
// later with link, and returns a read-write fd for it.
func (s *session) tmpfile(dirID NodeID, mode, uid, gid uint32) (int, error) {
	dir, err := s.mutableDir(dirID)
	if err != nil {
		return -1, err
	}
	fd, err := openat2(dir.fd, ".", unix.O_TMPFILE|unix.O_RDWR, mode&0o777)
	if err != nil {
		return -1, err
	}
	pathFD, err := unix.Dup(fd)
	if err == nil {
		unix.CloseOnExec(pathFD)
		var st unix.Stat_t
		if err = unix.Fstat(pathFD, &st); err == nil {
			err = setOwnerMode(pathFD, &st, mode, uid, gid)
		}
		if err == nil {
			// The node has no name: it cannot be reopened, only linked.
			child := s.add(dir, "", pathFD, &st)
			a := attrOf(&st)
			s.out = le.AppendUint64(s.out, uint64(child))
			s.out = appendAttr(s.out, &a)
			return fd, nil
		}
		unix.Close(pathFD)
	}
	unix.Close(fd)
	return -1, err
}

func clearNonblock(fd int) error {
	_, err := unix.FcntlInt(uintptr(fd), unix.F_SETFL, 0)
	return err
}

func (s *session) mkdir(dirID NodeID, mode, uid, gid uint32, name string) error {
	if err := checkName(name); err != nil {
		return err
	}
	dir, err := s.mutableDir(dirID)
	if err != nil {
		return err
	}
	before, err := ctimeOf(dir)
	if err != nil {
		return err
	}
	if err := unix.Mkdirat(dir.fd, name, 0o700); err != nil {
		return err
	}
	return s.newNodeChanged(dir, name, nil, mode, uid, gid, before)
}

// mknod makes a FIFO or a socket node (whose I/O the sentry serves
// itself), or an empty regular file. A device node never: it would give
// host processes a way into a device, whatever the guest may do.
func (s *session) mknod(dirID NodeID, mode, uid, gid uint32, name string) error {
	if err := checkName(name); err != nil {
		return err
	}
	switch mode & unix.S_IFMT {
	case unix.S_IFIFO, unix.S_IFSOCK, unix.S_IFREG:
	case unix.S_IFCHR, unix.S_IFBLK:
		return unix.EPERM
	default:
		return unix.EINVAL
	}
	dir, err := s.mutableDir(dirID)
	if err != nil {
		return err
	}
	before, err := ctimeOf(dir)
	if err != nil {
		return err
	}
	if err := unix.Mknodat(dir.fd, name, mode&unix.S_IFMT|0o600, 0); err != nil {
		return err
	}
	return s.newNodeChanged(dir, name, nil, mode, uid, gid, before)
}

func (s *session) symlink(dirID NodeID, uid, gid uint32, name, target string) error {
	if err := checkName(name); err != nil {
		return err
	}
	if target == "" || len(target) >= unix.PathMax || containsNUL(target) {
		return unix.EINVAL
	}
	dir, err := s.mutableDir(dirID)
	if err != nil {
		return err
	}
	before, err := ctimeOf(dir)
	if err != nil {
		return err
	}
	if err := unix.Symlinkat(target, dir.fd, name); err != nil {
		return err
	}
	return s.newNodeChanged(dir, name, nil, unix.S_IFLNK|0o777, uid, gid, before)
}

// link names target again, in dir.
func (s *session) link(dirID, targetID NodeID, name string) error {
	if err := checkName(name); err != nil {
		return err
	}
	dir, err := s.mutableDir(dirID)
	if err != nil {
		return err
	}
	target, err := s.lookup(targetID)
	if err != nil {
		return err
	}
	if target.mode&unix.S_IFMT == unix.S_IFDIR {
		return unix.EPERM
	}
	before, err := ctimeOf(dir)
	if err != nil {
		return err
	}
	// AT_EMPTY_PATH links the file target holds, never a name that could
	// have been swapped for a link meanwhile.
	if err := unix.Linkat(target.fd, "", dir.fd, name, unix.AT_EMPTY_PATH); err != nil {
		return err
	}
	ident := unix.Stat_t{Dev: target.dev, Ino: target.ino}
	var st unix.Stat_t
	if err := unix.Fstatat(target.fd, "", &st, unix.AT_EMPTY_PATH|unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return err
	}
	return s.newNodeChanged(dir, name, &ident, st.Mode, st.Uid, st.Gid, before)
}

// newNodeChanged is newNode for a name made in dir, whose change time was
// before until then, adding the DirChange to the answer.
func (s *session) newNodeChanged(dir *node, name string, ident *unix.Stat_t, mode, uid, gid uint32, before unix.Timespec) error {
	if err := s.newNode(dir, name, ident, mode, uid, gid); err != nil {
		return err
	}
	s.answerDirChange(dir, before)
	return nil
}

// unlink removes a name (a directory with AT_REMOVEDIR). Nodes walked to
// it stay open, as a removed file does for whoever has it open, but can
// no longer be reopened.
func (s *session) unlink(dirID NodeID, flags int, name string) error {
	if err := checkName(name); err != nil {
		return err
	}
	if flags&^unix.AT_REMOVEDIR != 0 {
		return unix.EINVAL
	}
	dir, err := s.mutableDir(dirID)
	if err != nil {
		return err
	}
	before, err := ctimeOf(dir)
	if err != nil {
		return err
	}
	if err := unix.Unlinkat(dir.fd, name, flags); err != nil {
		return err
	}
	s.detach(keyOf(dir, name))
	s.answerDirChange(dir, before)
	return nil
}

// renameFlags are those renameat2 may be given.
const renameFlags = unix.RENAME_NOREPLACE | unix.RENAME_EXCHANGE | unix.RENAME_WHITEOUT

func (s *session) rename(oldID, newID NodeID, flags uint32, oldName, newName string) error {
	if err := checkName(oldName); err != nil {
		return err
	}
	if err := checkName(newName); err != nil {
		return err
	}
	if flags&^renameFlags != 0 {
		return unix.EINVAL
	}
	oldDir, err := s.mutableDir(oldID)
	if err != nil {
		return err
	}
	newDir, err := s.mutableDir(newID)
	if err != nil {
		return err
	}
	oldBefore, err := ctimeOf(oldDir)
	if err != nil {
		return err
	}
	newBefore, err := ctimeOf(newDir)
	if err != nil {
		return err
	}
	if err := unix.Renameat2(oldDir.fd, oldName, newDir.fd, newName, uint(flags)); err != nil {
		return err
	}
	s.answerDirChange(oldDir, oldBefore)
	s.answerDirChange(newDir, newBefore)
	from, to := keyOf(oldDir, oldName), keyOf(newDir, newName)
	if flags&unix.RENAME_EXCHANGE != 0 {
		moved, swapped := s.byName[from], s.byName[to]
		delete(s.byName, from)
		delete(s.byName, to)
		s.move(moved, newDir, to)
		s.move(swapped, oldDir, from)
		return nil
	}
	s.detach(to) // replaced, if it was there
	moved := s.byName[from]
	delete(s.byName, from)
	s.move(moved, newDir, to)
	return nil
}

// setAttr applies a change of attributes: owner, then mode (a change of
// owner clears the set-id bits), size, times. The answer is the new attr.
func (s *session) setAttr(id NodeID, a SetAttr) error {
	if s.readonly {
		return unix.EROFS
	}
	n, err := s.lookup(id)
	if err != nil {
		return err
	}
	typ := n.mode & unix.S_IFMT
	if a.Mask&SetOwner != 0 {
		if err := unix.Fchownat(n.fd, "", int(int32(a.UID)), int(int32(a.GID)), unix.AT_EMPTY_PATH|unix.AT_SYMLINK_NOFOLLOW); err != nil {
			return err
		}
	}
	if a.Mask&SetMode != 0 && typ != unix.S_IFLNK {
		if err := unix.Fchmodat(n.fd, "", a.Mode&0o7777, unix.AT_EMPTY_PATH); err != nil {
			return err
		}
	}
	if a.Mask&SetSize != 0 {
		switch {
		case typ == unix.S_IFDIR:
			return unix.EISDIR
		case typ != unix.S_IFREG:
			return unix.EINVAL
		case a.Size < 0:
			return unix.EINVAL
		}
		fd, err := reopen(n, unix.O_WRONLY)
		if err != nil {
			return err
		}
		err = unix.Ftruncate(fd, a.Size)
		unix.Close(fd)
		if err != nil {
			return err
		}
	}
	if a.Mask&(SetAtime|SetMtime) != 0 {
		ts := []unix.Timespec{{Nsec: unix.UTIME_OMIT}, {Nsec: unix.UTIME_OMIT}}
		if a.Mask&SetAtime != 0 {
			ts[0] = a.Atime
		}
		if a.Mask&SetMtime != 0 {
			ts[1] = a.Mtime
		}
		if err := unix.UtimesNanoAt(n.fd, "", ts, unix.AT_EMPTY_PATH|unix.AT_SYMLINK_NOFOLLOW); err != nil {
			return err
		}
	}
	return s.stat(id)
}

func (s *session) statFS(id NodeID) error {
	n, err := s.lookup(id)
	if err != nil {
		return err
	}
	var st unix.Statfs_t
	if err := unix.Fstatfs(n.fd, &st); err != nil {
		return err
	}
	out := StatFS{Type: st.Type, Bsize: st.Bsize, Frsize: st.Frsize, Namelen: st.Namelen, Blocks: st.Blocks,
		Bfree: st.Bfree, Bavail: st.Bavail, Files: st.Files, Ffree: st.Ffree}
	s.out = appendStatFS(s.out, &out)
	return nil
}

func containsNUL(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] == 0 {
			return true
		}
	}
	return false
}
