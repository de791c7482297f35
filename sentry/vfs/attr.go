package vfs

import "golang.org/x/sys/unix"

// Changes of attributes (chmod, chown, utimes, truncate, fallocate) and
// statfs, with Linux's rules: the owner or CAP_FOWNER may change a mode or
// times, CAP_CHOWN gives a file away, and changing contents or owner costs
// the setuid and setgid bits.

// AttrSetter is implemented by the inodes of a writable file system.
type AttrSetter interface {
	// SetAttr changes the attributes whose bits are in a.Mask, and the
	// status change time. A size change of a regular file also updates
	// its modification time.
	SetAttr(a *Attr) error
}

// Attr is a change of attributes for AttrSetter.
type Attr struct {
	Mask     uint32 // Set* bits
	Mode     uint32 // permission bits, 07777
	UID, GID uint32
	Size     int64
	// Atime and Mtime may have Nsec UTIME_NOW: the file system's clock.
	Atime, Mtime unix.Timespec
}

// Attr.Mask bits.
const (
	SetMode = 1 << iota
	SetUID
	SetGID
	SetSize
	SetAtime
	SetMtime
)

// Allocator is implemented by open files that can reserve space
// (fallocate(2) with mode 0): the range reads as zeros, at least what it
// held, and the size grows to cover it. A task interrupted on the way gets
// EINTR and nothing allocated, as from Linux's tmpfs.
type Allocator interface {
	Allocate(c Context, off, length int64) error
}

// setAttr applies a to s, the inode of d, and reports the change to
// inotify watches.
func setAttr(s AttrSetter, d *Dentry, a *Attr) error {
	if err := s.SetAttr(a); err != nil {
		return err
	}
	notifyAttr(d, a)
	return nil
}

// fileAttrs is the AttrSetter and attributes of what fchmod and fchown
// change for f: the inode of its path or, for a file with no path (a
// pipe, a socket), the inode the open file keeps itself, when it lets
// its attributes change, as Linux's pipefs and sockfs inodes do. Other
// such files answer EROFS.
func fileAttrs(f *File) (AttrSetter, Stat, error) {
	if f.path.Dentry != nil {
		return writableInodeStat(f.path)
	}
	s, ok := f.impl.(AttrSetter)
	if !ok {
		return nil, Stat{}, unix.EROFS
	}
	st, err := f.impl.Stat()
	return s, st, err
}

// Chmod implements chmod(2) on the file at p.
func Chmod(c *Creds, p Path, mode uint32) error {
	s, st, err := writableInodeStat(p)
	if err != nil {
		return err
	}
	return chmod(c, s, st, p.Dentry, mode)
}

// Fchmod implements fchmod(2) on f.
func Fchmod(c *Creds, f *File, mode uint32) error {
	s, st, err := fileAttrs(f)
	if err != nil {
		return err
	}
	return chmod(c, s, st, f.path.Dentry, mode)
}

// chmod gives s, whose attributes are st, the permission bits of mode;
// d, its dentry if it has one, hears of it. A symlink's mode cannot
// change (EOPNOTSUPP, before ownership, as Linux's notify_change): only
// fchmodat2's AT_SYMLINK_NOFOLLOW or an O_PATH descriptor reach one.
func chmod(c *Creds, s AttrSetter, st Stat, d *Dentry, mode uint32) error {
	if st.Type() == unix.S_IFLNK {
		return unix.EOPNOTSUPP
	}
	if !c.ownerOrCapable(&st) {
		return unix.EPERM
	}
	mode &= 0o7777
	if mode&unix.S_ISGID != 0 && !c.inGroup(st.GID) && !c.capableOver(&st, unix.CAP_FSETID) {
		mode &^= unix.S_ISGID
	}
	return setAttr(s, d, &Attr{Mask: SetMode, Mode: mode})
}

// Chown implements chown(2) on the file at p; -1 leaves an id as it is.
// A file that is not a directory loses its setuid bit, and its setgid bit
// when it is group-executable (or the caller is outside its group and
// lacks CAP_FSETID).
func Chown(c *Creds, p Path, uid, gid int64) error {
	s, st, err := writableInodeStat(p)
	if err != nil {
		return err
	}
	return chown(c, s, st, p.Dentry, uid, gid)
}

// Fchown implements fchown(2) on f, with Chown's rules.
func Fchown(c *Creds, f *File, uid, gid int64) error {
	s, st, err := fileAttrs(f)
	if err != nil {
		return err
	}
	return chown(c, s, st, f.path.Dentry, uid, gid)
}

// chown gives s, whose attributes are st, the owner uid and gid (-1
// leaves one); d, its dentry if it has one, hears of it.
func chown(c *Creds, s AttrSetter, st Stat, d *Dentry, uid, gid int64) error {
	a := Attr{}
	if uid != -1 {
		if !(c.FSUID == st.UID && uint32(uid) == st.UID) && !c.capableOver(&st, unix.CAP_CHOWN) {
			return unix.EPERM
		}
		a.Mask |= SetUID
		a.UID = uint32(uid)
	}
	if gid != -1 {
		if !(c.FSUID == st.UID && (uint32(gid) == st.GID || c.inGroup(uint32(gid)))) && !c.capableOver(&st, unix.CAP_CHOWN) {
			return unix.EPERM
		}
		a.Mask |= SetGID
		a.GID = uint32(gid)
	}
	if st.Type() != unix.S_IFDIR {
		mode := st.Mode & 0o7777 &^ unix.S_ISUID
		if st.Mode&unix.S_ISGID != 0 && (st.Mode&unix.S_IXGRP != 0 || !c.inGroup(st.GID) && !c.capableOver(&st, unix.CAP_FSETID)) {
			mode &^= unix.S_ISGID
		}
		if mode != st.Mode&0o7777 {
			if !c.ownerOrCapable(&st) {
				return unix.EPERM
			}
			a.Mask |= SetMode
			a.Mode = mode
		}
	}
	return setAttr(s, d, &a)
}

// Utimes implements utimensat(2) on the file at p: times nil sets both
// to now; otherwise each may be UTIME_NOW or UTIME_OMIT.
func Utimes(c *Creds, p Path, times *[2]unix.Timespec) error {
	if times != nil {
		if times[0].Nsec == unix.UTIME_OMIT && times[1].Nsec == unix.UTIME_OMIT {
			return nil
		}
		for _, ts := range times {
			if ts.Nsec != unix.UTIME_NOW && ts.Nsec != unix.UTIME_OMIT && (ts.Nsec < 0 || ts.Nsec >= 1e9) {
				return unix.EINVAL
			}
		}
	}
	s, st, err := writableInodeStat(p)
	if err != nil {
		return err
	}
	now := unix.Timespec{Nsec: unix.UTIME_NOW}
	touch := times == nil || times[0].Nsec == unix.UTIME_NOW && times[1].Nsec == unix.UTIME_NOW
	if touch {
		// Setting both to now needs only write permission.
		if !c.ownerOrCapable(&st) {
			if err := c.Permission(&st, MayWrite); err != nil {
				return err
			}
		}
		return setAttr(s, p.Dentry, &Attr{Mask: SetAtime | SetMtime, Atime: now, Mtime: now})
	}
	if !c.ownerOrCapable(&st) {
		return unix.EPERM
	}
	a := Attr{}
	if times[0].Nsec != unix.UTIME_OMIT {
		a.Mask |= SetAtime
		a.Atime = times[0]
	}
	if times[1].Nsec != unix.UTIME_OMIT {
		a.Mask |= SetMtime
		a.Mtime = times[1]
	}
	return setAttr(s, p.Dentry, &a)
}

// killPriv adds to a the loss of setuid and setgid bits that changing a
// file's contents costs a caller without CAP_FSETID (should_remove_suid).
func (c *Creds) killPriv(st *Stat, a *Attr) {
	if c.capableOver(st, unix.CAP_FSETID) || st.Type() != unix.S_IFREG {
		return
	}
	mode := st.Mode & 0o7777 &^ unix.S_ISUID
	if st.Mode&unix.S_ISGID != 0 && (st.Mode&unix.S_IXGRP != 0 || !c.inGroup(st.GID)) {
		mode &^= unix.S_ISGID
	}
	if mode != st.Mode&0o7777 {
		a.Mask |= SetMode
		a.Mode = mode
	}
}

// Truncate implements truncate(2) on the file at p (size already checked
// to be non-negative). As ftruncate, it changes the modification time even
// when the size stays (Linux 6.x does so on tmpfs and ext4 alike).
func Truncate(c *Creds, p Path, size int64) error {
	st, err := p.Dentry.inode.Stat()
	if err != nil {
		return err
	}
	switch st.Type() {
	case unix.S_IFREG:
	case unix.S_IFDIR:
		return unix.EISDIR
	default:
		return unix.EINVAL
	}
	s, err := writableInode(p)
	if err != nil {
		return err
	}
	if err := c.Permission(&st, MayWrite); err != nil {
		return err
	}
	if err := c.Landlock.Check(p, unix.LANDLOCK_ACCESS_FS_TRUNCATE); err != nil {
		return err
	}
	now := unix.Timespec{Nsec: unix.UTIME_NOW}
	a := Attr{Mask: SetSize | SetMtime, Size: size, Mtime: now}
	c.killPriv(&st, &a)
	return setAttr(s, p.Dentry, &a)
}

// Ftruncate implements ftruncate(2): f must be a regular file open for
// writing.
func Ftruncate(c *Creds, f *File, size int64) error {
	p := f.Path()
	if r, ok := f.impl.(Resizer); ok && p.Dentry == nil && f.Writable() {
		return r.SetSize(size) // a file with no name (memfd_create)
	}
	if !f.Writable() || f.Flags()&unix.O_PATH != 0 || p.Dentry == nil || p.Dentry.isDir {
		return unix.EINVAL
	}
	st, err := p.Dentry.inode.Stat()
	if err != nil {
		return err
	}
	if st.Type() != unix.S_IFREG {
		return unix.EINVAL
	}
	if f.landlockDenied&unix.LANDLOCK_ACCESS_FS_TRUNCATE != 0 {
		return unix.EACCES // as the domain that opened it said (Landlock)
	}
	s, err := writableInode(p)
	if err != nil {
		return err
	}
	now := unix.Timespec{Nsec: unix.UTIME_NOW}
	a := Attr{Mask: SetSize | SetMtime, Size: size, Mtime: now}
	c.killPriv(&st, &a)
	return setAttr(s, p.Dentry, &a)
}

// Resizer is an open file with no name that ftruncate resizes directly.
type Resizer interface {
	SetSize(size int64) error
}

// Fallocate implements fallocate(2) with mode 0, the only one supported:
// other modes give EOPNOTSUPP.
func Fallocate(c Context, f *File, mode uint32, off, length int64) error {
	if off < 0 || length <= 0 {
		return unix.EINVAL
	}
	if mode != 0 {
		return unix.EOPNOTSUPP
	}
	if !f.Writable() {
		return unix.EBADF
	}
	st, err := f.Stat()
	if err != nil {
		return err
	}
	switch st.Type() {
	case unix.S_IFREG:
	case unix.S_IFIFO:
		return unix.ESPIPE
	case unix.S_IFDIR:
		return unix.EISDIR
	default:
		return unix.ENODEV
	}
	if off+length < 0 {
		return unix.EFBIG
	}
	a, ok := f.impl.(Allocator)
	if !ok {
		return unix.EOPNOTSUPP
	}
	if err := a.Allocate(c, off, length); err != nil {
		return err
	}
	f.notify(unix.IN_MODIFY)
	return nil
}

// FSStat is a file system's statfs(2).
type FSStat struct {
	Type                  int64
	Bsize                 int64
	Blocks, Bfree, Bavail uint64
	Files, Ffree          uint64
	Fsid                  [2]int32
	Namelen               int64
	Frsize                int64
	Flags                 int64 // ST_* from the mount's flags
}

// FSStater is implemented by inodes whose file system reports its usage.
type FSStater interface {
	StatFS() (FSStat, error)
}

// Magic numbers of the file systems the sentry mounts, by mount type, for
// those that report nothing themselves.
var fsMagic = map[string]int64{
	"tmpfs":    0x01021994,
	"devtmpfs": 0x01021994,
	"proc":     0x9fa0,
	"9p":       0x01021997,
}

// stValid is ST_VALID: f_flags is meaningful.
const stValid = 0x20

// StatFS implements statfs(2) for the file at p.
func StatFS(p Path) (FSStat, error) {
	var s FSStat
	if st, ok := p.Dentry.inode.(FSStater); ok {
		var err error
		if s, err = st.StatFS(); err != nil {
			return s, err
		}
	} else {
		s = FSStat{Type: fsMagic[p.Mount.Type], Bsize: 4096, Namelen: NameMax}
	}
	if s.Frsize == 0 {
		s.Frsize = s.Bsize
	}
	st, err := p.Dentry.inode.Stat()
	if err == nil && s.Fsid == [2]int32{} {
		s.Fsid = [2]int32{int32(unix.Minor(st.Dev)), int32(unix.Major(st.Dev))}
	}
	s.Flags = stValid
	for _, f := range [...][2]int64{{unix.MS_RDONLY, unix.ST_RDONLY}, {unix.MS_NOSUID, unix.ST_NOSUID},
		{unix.MS_NODEV, unix.ST_NODEV}, {unix.MS_NOEXEC, unix.ST_NOEXEC}, {unix.MS_SYNCHRONOUS, unix.ST_SYNCHRONOUS},
		{unix.MS_NOATIME, unix.ST_NOATIME}, {unix.MS_NODIRATIME, unix.ST_NODIRATIME}, {unix.MS_RELATIME, unix.ST_RELATIME}} {
		if int64(p.Mount.Flags)&f[0] != 0 {
			s.Flags |= f[1]
		}
	}
	return s, nil
}
