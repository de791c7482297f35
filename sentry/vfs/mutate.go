package vfs

import (
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

// Writable file systems. A directory of a file system that can change
// implements DirWriter, and its inodes implement AttrSetter. The functions
// below check Linux's rules once for every such file system: the name must
// be absent or present, of the right type, not a mount point; the mount
// must be writable; the caller needs write and search permission on the
// directory and, in a sticky directory, must own the file or the
// directory. A file system then only stores what it is told, and reports
// what only it can know (ENOTEMPTY, ENOSPC).
//
// Names change under one lock (mutateMu), so a check and the change it
// guards cannot be separated by another change; lookups go on meanwhile.
// The dentry cache, which holds only names that exist, follows each
// change: a removed name leaves its parent's cache (an open File keeps its
// dentry and inode and goes on working), a renamed one moves.

// DirWriter is implemented by the directories of a writable file system.
// vfs calls it with the name's absence or presence, the permissions and
// the types already checked. Modes carry the S_IFMT bits; uid, gid and the
// permission bits are final (umask and setgid rules applied).
type DirWriter interface {
	// Create makes a regular file.
	Create(name string, mode, uid, gid uint32) (Inode, error)
	Mkdir(name string, mode, uid, gid uint32) (Inode, error)
	// Mknod makes a special file (S_IFIFO, S_IFCHR, ...); a file system
	// answers EPERM for the types it does not keep.
	Mknod(name string, mode uint32, rdev uint64, uid, gid uint32) (Inode, error)
	Symlink(name, target string, uid, gid uint32) (Inode, error)
	// Link adds name for target, an inode of the same file system (EXDEV
	// otherwise) that is not a directory.
	Link(name string, target Inode) error
	// Unlink removes a name that is not a directory; Rmdir an empty
	// directory (ENOTEMPTY otherwise).
	Unlink(name string) error
	Rmdir(name string) error
	// Rename moves oldName to newName in newDir, a directory of the same
	// file system, replacing what is there (a directory only by an empty
	// one), with RENAME_NOREPLACE or RENAME_EXCHANGE in flags.
	Rename(oldName string, newDir Inode, newName string, flags uint32) error
}

// Target is a name a call creates, removes or renames: the directory that
// holds it, the path's last component, and whether the path ended in "/".
// Name is ".", ".." or "/" (the root itself) when the path ended so; the
// calls refuse those as Linux does.
type Target struct {
	Dir   Path
	Name  string
	Slash bool
}

// LookupTarget resolves every component of name but the last, following
// symlinks, and returns the directory and the last component.
func (r Resolver) LookupTarget(name string) (Target, error) {
	if name == "" {
		return Target{}, unix.ENOENT
	}
	if len(name) >= PathMax {
		return Target{}, unix.ENAMETOOLONG
	}
	trimmed := strings.TrimRight(name, "/")
	if trimmed == "" {
		return Target{Dir: r.Root, Name: "/", Slash: true}, nil
	}
	t := Target{Dir: r.Start, Name: trimmed, Slash: trimmed != name}
	if i := strings.LastIndexByte(trimmed, '/'); i >= 0 {
		t.Name = trimmed[i+1:]
		dir, err := r.Lookup(trimmed[:i+1], true)
		if err != nil {
			return Target{}, err
		}
		t.Dir = dir
	}
	if !t.Dir.Dentry.isDir {
		return Target{}, unix.ENOTDIR
	}
	// The last component is looked up in its directory too.
	if err := r.Creds.maySearch(t.Dir.Dentry); err != nil {
		return Target{}, err
	}
	if len(t.Name) > NameMax {
		return Target{}, unix.ENAMETOOLONG
	}
	return t, nil
}

// special reports a last component that names no entry of its own.
func (t Target) special() bool { return t.Name == "." || t.Name == ".." || t.Name == "/" }

// LookupCreate resolves name for open(O_CREAT): it returns the file if it
// exists (following a final symlink when follow is set, even a dangling
// one: its target is then what gets created), else the Target to create.
func (r Resolver) LookupCreate(name string, follow bool) (Path, Target, error) {
	for links := 0; ; links++ {
		t, err := r.LookupTarget(name)
		if err != nil {
			return Path{}, Target{}, err
		}
		if t.special() {
			p, err := r.Lookup(name, true)
			return p, Target{}, err
		}
		c, err := t.Dir.Dentry.child(t.Name)
		if err == unix.ENOENT {
			return Path{}, t, nil
		}
		if err != nil {
			return Path{}, Target{}, err
		}
		p := crossMounts(Path{t.Dir.Mount, c})
		if !p.Dentry.isLink || !(follow || t.Slash) {
			if t.Slash && !p.Dentry.isDir {
				return Path{}, Target{}, unix.ENOTDIR
			}
			return p, Target{}, nil
		}
		if links >= MaxSymlinks || r.Restrict&unix.RESOLVE_NO_SYMLINKS != 0 {
			return Path{}, Target{}, unix.ELOOP
		}
		target, err := Readlink(p.Dentry.inode, r.Caller)
		if err != nil {
			return Path{}, Target{}, err
		}
		if target == "" {
			return Path{}, Target{}, unix.ENOENT
		}
		if t.Slash {
			target += "/"
		}
		r.Start, name = t.Dir, target
	}
}

// mutateMu serialises every change to names (create, link, unlink,
// rename) in every file system.
var mutateMu sync.Mutex

// renameMu guards the names and parents of dentries: rename changes them,
// path walks and path names read them (Linux's rename_lock). Not to be
// confused with the kernel's process tree lock, Kernel.treeMu.
var renameMu sync.RWMutex

// writableDir returns the DirWriter of dir, or EROFS.
func writableDir(dir Path) (DirWriter, error) {
	if dir.Mount.Flags&unix.MS_RDONLY != 0 {
		return nil, unix.EROFS
	}
	w, ok := dir.Dentry.inode.(DirWriter)
	if !ok {
		return nil, unix.EROFS
	}
	return w, nil
}

// writableInodeStat is writableInode with the inode's attributes.
func writableInodeStat(p Path) (AttrSetter, Stat, error) {
	s, err := writableInode(p)
	if err != nil {
		return nil, Stat{}, err
	}
	st, err := p.Dentry.inode.Stat()
	return s, st, err
}

// writableInode returns the AttrSetter of the file at p, or EROFS.
func writableInode(p Path) (AttrSetter, error) {
	if p.Mount == nil || p.Dentry == nil || p.Mount.Flags&unix.MS_RDONLY != 0 {
		return nil, unix.EROFS
	}
	s, ok := p.Dentry.inode.(AttrSetter)
	if !ok {
		return nil, unix.EROFS
	}
	return s, nil
}

// isMountPoint reports whether c, a child of a directory in m, has a
// file system mounted on it (made mount points always have).
func isMountPoint(m *Mount, c *Dentry) bool {
	if m.mountedOn(c) != nil {
		return true
	}
	p := c.parent
	if p == nil {
		return true // a file system's root
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.made[c.name] == c
}

// addChildLocked caches a new child of d; d.mu is held.
func (d *Dentry) addChildLocked(name string, ino Inode, mode uint32) *Dentry {
	c := &Dentry{name: name, parent: d, inode: ino,
		isDir: mode&unix.S_IFMT == unix.S_IFDIR, isLink: mode&unix.S_IFMT == unix.S_IFLNK}
	if d.children == nil {
		d.children = make(map[string]*Dentry)
	}
	d.children[name] = c
	delete(d.absent, name)
	return c
}

// existsLocked forgets that name was found absent in d when the file
// system, asked to make it, answered EEXIST (err): it was made behind the
// sandbox since, and the next look-up is to find it. d.mu is held.
func (d *Dentry) existsLocked(name string, err error) {
	if err == unix.EEXIST {
		delete(d.absent, name)
	}
}

// dropChildLocked forgets c, the child name of d; d.mu is held.
func (d *Dentry) dropChildLocked(name string, c *Dentry) {
	if d.children[name] == c {
		delete(d.children, name)
	}
}

// newOwner returns the owner, group and mode of a file the caller makes in
// a directory with attributes dir: the caller's fsuid, and its fsgid
// unless the directory is setgid, whose group the file then takes (and a
// new directory the setgid bit). A setgid, group-executable file made by
// a caller outside that group loses its setgid bit (mode_strip_sgid).
func (c *Creds) newOwner(dir *Stat, mode uint32) (uid, gid, m uint32) {
	uid, gid, m = c.FSUID, c.FSGID, mode
	if dir.Mode&unix.S_ISGID == 0 {
		return uid, gid, m
	}
	gid = dir.GID
	if mode&unix.S_IFMT == unix.S_IFDIR {
		m |= unix.S_ISGID
	} else if m&(unix.S_ISGID|unix.S_IXGRP) == unix.S_ISGID|unix.S_IXGRP &&
		!c.inGroup(gid) && !c.capableOver(dir, unix.CAP_FSETID) {
		m &^= unix.S_ISGID
	}
	return uid, gid, m
}

// create is what every call that adds a name shares: Linux's
// filename_create, then may_create.
func create(c *Creds, t Target, mode uint32, mk func(w DirWriter, mode, uid, gid uint32) (Inode, error)) (Path, error) {
	if t.special() {
		return Path{}, unix.EEXIST
	}
	ev := newEvents()
	defer ev.send() // after the locks below are released
	mutateMu.Lock()
	defer mutateMu.Unlock()
	d := t.Dir.Dentry
	if _, err := d.child(t.Name); err == nil {
		return Path{}, unix.EEXIST
	} else if err != unix.ENOENT {
		return Path{}, err
	}
	if t.Slash && mode&unix.S_IFMT != unix.S_IFDIR {
		// "name/" asks for a directory.
		return Path{}, unix.ENOENT
	}
	w, err := writableDir(t.Dir)
	if err != nil {
		return Path{}, err
	}
	if err := c.Landlock.Check(t.Dir, landlockMake(mode)); err != nil {
		return Path{}, err
	}
	st, err := AccessStat(d.inode)
	if err != nil {
		return Path{}, err
	}
	if err := c.Permission(&st, MayWrite|MayExec); err != nil {
		return Path{}, err
	}
	uid, gid, mode := c.newOwner(&st, mode)
	d.mu.Lock()
	defer d.mu.Unlock()
	ino, err := mk(w, mode, uid, gid)
	if err != nil {
		d.existsLocked(t.Name, err)
		return Path{}, err
	}
	ev.name(d, unix.IN_CREATE|dirFlag(mode&unix.S_IFMT == unix.S_IFDIR), t.Name, 0)
	return Path{t.Dir.Mount, d.addChildLocked(t.Name, ino, mode)}, nil
}

// Create makes a regular file for open(O_CREAT) and returns it. mode is
// the permission bits with the umask applied.
func Create(c *Creds, t Target, mode uint32) (Path, error) {
	mode = unix.S_IFREG | mode&0o7777
	return create(c, t, mode, func(w DirWriter, mode, uid, gid uint32) (Inode, error) {
		return w.Create(t.Name, mode, uid, gid)
	})
}

// Mkdir implements mkdir(2); mode has the umask applied.
func Mkdir(c *Creds, t Target, mode uint32) error {
	mode = unix.S_IFDIR | mode&(0o777|unix.S_ISVTX)
	_, err := create(c, t, mode, func(w DirWriter, mode, uid, gid uint32) (Inode, error) {
		return w.Mkdir(t.Name, mode, uid, gid)
	})
	return err
}

// Mknod implements mknod(2); mode has the umask applied. A regular file
// may be made by anyone, device nodes only with CAP_MKNOD.
func Mknod(c *Creds, t Target, mode uint32, rdev uint64) error {
	switch mode & unix.S_IFMT {
	case 0:
		mode |= unix.S_IFREG
	case unix.S_IFREG, unix.S_IFCHR, unix.S_IFBLK, unix.S_IFIFO, unix.S_IFSOCK:
	case unix.S_IFDIR:
		return unix.EPERM
	default:
		return unix.EINVAL
	}
	mode &= unix.S_IFMT | 0o7777
	_, err := create(c, t, mode, func(w DirWriter, mode, uid, gid uint32) (Inode, error) {
		typ := mode & unix.S_IFMT
		if (typ == unix.S_IFCHR || typ == unix.S_IFBLK) && !c.capable(unix.CAP_MKNOD) {
			return nil, unix.EPERM
		}
		if typ == unix.S_IFREG {
			return w.Create(t.Name, mode, uid, gid)
		}
		return w.Mknod(t.Name, mode, rdev, uid, gid)
	})
	return err
}

// Symlink implements symlink(2).
func Symlink(c *Creds, t Target, target string) error {
	_, err := create(c, t, unix.S_IFLNK|0o777, func(w DirWriter, _, uid, gid uint32) (Inode, error) {
		return w.Symlink(t.Name, target, uid, gid)
	})
	return err
}

// Link implements link(2): old, already resolved, gets the name t.
func Link(c *Creds, old Path, t Target) error {
	if t.special() {
		return unix.EEXIST
	}
	ev := newEvents()
	defer ev.send()
	mutateMu.Lock()
	defer mutateMu.Unlock()
	d := t.Dir.Dentry
	if _, err := d.child(t.Name); err == nil {
		return unix.EEXIST
	} else if err != unix.ENOENT {
		return err
	}
	if t.Slash {
		return unix.ENOENT
	}
	// A read-only mount answers EROFS, another mount EXDEV, even one
	// whose file system (devfs, procfs) cannot change.
	if t.Dir.Mount.Flags&unix.MS_RDONLY != 0 {
		return unix.EROFS
	}
	if old.Mount != t.Dir.Mount {
		return unix.EXDEV
	}
	w, err := writableDir(t.Dir)
	if err != nil {
		return err
	}
	ost, err := old.Dentry.inode.Stat()
	if err != nil {
		return err
	}
	// fs.protected_hardlinks: someone else's file only if it is a plain
	// file the caller could read and write.
	if !c.ownerOrCapable(&ost) {
		if ost.Type() != unix.S_IFREG || ost.Mode&unix.S_ISUID != 0 ||
			ost.Mode&(unix.S_ISGID|unix.S_IXGRP) == unix.S_ISGID|unix.S_IXGRP ||
			c.Permission(&ost, MayRead|MayWrite) != nil {
			return unix.EPERM
		}
	}
	if err := c.Landlock.checkRefer(old.parentDir(), old.Dentry, t.Dir, nil, false, false); err != nil {
		return err
	}
	st, err := AccessStat(d.inode)
	if err != nil {
		return err
	}
	if err := c.Permission(&st, MayWrite|MayExec); err != nil {
		return err
	}
	if ost.Type() == unix.S_IFDIR {
		return unix.EPERM
	}
	if l, ok := old.Dentry.inode.(Linkable); ost.Nlink == 0 && (!ok || !l.Linkable()) {
		return unix.ENOENT
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := w.Link(t.Name, old.Dentry.inode); err != nil {
		d.existsLocked(t.Name, err)
		return err
	}
	ev.inode(old.Dentry, unix.IN_ATTRIB)
	ev.name(d, unix.IN_CREATE, t.Name, 0)
	d.addChildLocked(t.Name, old.Dentry.inode, ost.Mode)
	return nil
}

// mayDelete is Linux's may_delete for the child c of directory dir (with
// attributes dst): write and search permission on the directory, the
// sticky rule, and the victim's type.
func (c *Creds) mayDelete(dst *Stat, victim *Dentry, isDir bool) error {
	if err := c.Permission(dst, MayWrite|MayExec); err != nil {
		return err
	}
	// The victim's owner matters only in a sticky directory (check_sticky).
	if dst.Mode&unix.S_ISVTX != 0 && dst.UID != c.FSUID {
		vst, err := AccessStat(victim.inode)
		if err != nil {
			return err
		}
		if vst.UID != c.FSUID && !c.capableOver(&vst, unix.CAP_FOWNER) {
			return unix.EPERM
		}
	}
	if isDir && !victim.isDir {
		return unix.ENOTDIR
	}
	if !isDir && victim.isDir {
		return unix.EISDIR
	}
	return nil
}

// Unlink implements unlink(2).
func Unlink(c *Creds, t Target) error {
	if t.special() {
		return unix.EISDIR
	}
	return remove(c, t, false)
}

// Rmdir implements rmdir(2).
func Rmdir(c *Creds, t Target) error {
	switch t.Name {
	case "..":
		return unix.ENOTEMPTY
	case ".":
		return unix.EINVAL
	case "/":
		return unix.EBUSY
	}
	return remove(c, t, true)
}

func remove(c *Creds, t Target, isDir bool) error {
	w, err := writableDir(t.Dir)
	if err != nil {
		return err
	}
	ev := newEvents()
	defer ev.send()
	mutateMu.Lock()
	defer mutateMu.Unlock()
	d := t.Dir.Dentry
	victim, err := d.child(t.Name)
	if err != nil {
		return err
	}
	if t.Slash && !isDir {
		if victim.isDir {
			return unix.EISDIR
		}
		return unix.ENOTDIR
	}
	if err := c.Landlock.Check(t.Dir, landlockRemoveRight(isDir)); err != nil {
		return err
	}
	st, err := AccessStat(d.inode)
	if err != nil {
		return err
	}
	if err := c.mayDelete(&st, victim, isDir); err != nil {
		return err
	}
	if isMountPoint(t.Dir.Mount, victim) {
		return unix.EBUSY
	}
	last := ev.lastLink(victim)
	d.mu.Lock()
	defer d.mu.Unlock()
	if isDir {
		err = w.Rmdir(t.Name)
	} else {
		err = w.Unlink(t.Name)
	}
	if err != nil {
		return err
	}
	d.dropChildLocked(t.Name, victim)
	unlinked(victim)
	if !isDir {
		ev.inode(victim, unix.IN_ATTRIB)
	}
	if last {
		ev.removed(victim)
	}
	ev.name(d, unix.IN_DELETE|dirFlag(isDir), t.Name, 0)
	return nil
}

// Unlinked is implemented by inodes that must hear when one of their names
// is removed (unlink, rmdir, a rename over it): a file system that caches
// attributes refreshes the link count.
type Unlinked interface {
	Unlinked()
}

// Moved is implemented by inodes that must hear when a rename moves them:
// a file system that caches attributes refreshes the change time.
type Moved interface {
	Moved()
}

func moved(d *Dentry) {
	if m, ok := d.inode.(Moved); ok {
		m.Moved()
	}
}

func unlinked(d *Dentry) {
	d.deleted.Store(true)
	if u, ok := d.inode.(Unlinked); ok {
		u.Unlinked()
	}
}

// Rename implements renameat2(2): from moves to to, with RENAME_NOREPLACE
// or RENAME_EXCHANGE in flags. RENAME_WHITEOUT, which only overlay file
// systems use, is not supported (EINVAL).
func Rename(c *Creds, from, to Target, flags uint32) error {
	if flags&^(unix.RENAME_NOREPLACE|unix.RENAME_EXCHANGE|unix.RENAME_WHITEOUT) != 0 ||
		flags&unix.RENAME_EXCHANGE != 0 && flags&(unix.RENAME_NOREPLACE|unix.RENAME_WHITEOUT) != 0 {
		return unix.EINVAL
	}
	if flags&unix.RENAME_WHITEOUT != 0 {
		if !c.capable(unix.CAP_MKNOD) {
			return unix.EPERM
		}
		return unix.EINVAL
	}
	exchange := flags&unix.RENAME_EXCHANGE != 0
	if from.Dir.Mount != to.Dir.Mount {
		return unix.EXDEV
	}
	if from.special() {
		return unix.EBUSY
	}
	if to.special() {
		if flags&unix.RENAME_NOREPLACE != 0 {
			return unix.EEXIST
		}
		return unix.EBUSY
	}
	w, err := writableDir(from.Dir)
	if err != nil {
		return err
	}
	ev := newEvents()
	defer ev.send()
	mutateMu.Lock()
	defer mutateMu.Unlock()
	od, nd := from.Dir.Dentry, to.Dir.Dentry
	old, err := od.child(from.Name)
	if err != nil {
		return err
	}
	victim, err := nd.child(to.Name)
	if err != nil && err != unix.ENOENT {
		return err
	}
	if flags&unix.RENAME_NOREPLACE != 0 && victim != nil {
		return unix.EEXIST
	}
	if exchange {
		if victim == nil {
			return unix.ENOENT
		}
		if !victim.isDir && to.Slash {
			return unix.ENOTDIR
		}
	}
	if !old.isDir && (from.Slash || !exchange && to.Slash) {
		return unix.ENOTDIR
	}
	renameMu.RLock()
	oldAboveNew, newAboveOld := isAncestor(old, nd), victim != nil && isAncestor(victim, od)
	renameMu.RUnlock()
	if oldAboveNew {
		return unix.EINVAL
	}
	if newAboveOld {
		if exchange {
			return unix.EINVAL
		}
		return unix.ENOTEMPTY
	}
	if err := c.Landlock.checkRefer(from.Dir, old, to.Dir, victim, true, exchange); err != nil {
		return err
	}
	if victim != nil && victim.inode == old.inode {
		return nil // two names of one file: nothing to do
	}
	ost, err := AccessStat(od.inode)
	if err != nil {
		return err
	}
	nst, err := AccessStat(nd.inode)
	if err != nil {
		return err
	}
	if err := c.mayDelete(&ost, old, old.isDir); err != nil {
		return err
	}
	switch {
	case victim == nil:
		err = c.Permission(&nst, MayWrite|MayExec)
	case exchange:
		err = c.mayDelete(&nst, victim, victim.isDir)
	default:
		err = c.mayDelete(&nst, victim, old.isDir)
	}
	if err != nil {
		return err
	}
	if od != nd {
		// A directory that changes parent has its ".." rewritten.
		for _, moved := range []*Dentry{old, victim} {
			if moved == nil || !moved.isDir || moved == victim && !exchange {
				continue
			}
			st, err := AccessStat(moved.inode)
			if err != nil {
				return err
			}
			if err := c.Permission(&st, MayWrite); err != nil {
				return err
			}
		}
	}
	if isMountPoint(from.Dir.Mount, old) || victim != nil && isMountPoint(to.Dir.Mount, victim) {
		return unix.EBUSY
	}
	lastVictim := victim != nil && !exchange && ev.lastLink(victim)
	od.mu.Lock()
	defer od.mu.Unlock()
	if nd != od {
		nd.mu.Lock()
		defer nd.mu.Unlock()
	}
	if err := w.Rename(from.Name, nd.inode, to.Name, flags); err != nil {
		if victim == nil {
			nd.existsLocked(to.Name, err)
		}
		return err
	}
	ev.renamed(od, from.Name, nd, to.Name, old, victim, exchange, lastVictim)
	moved(old)
	if exchange {
		moved(victim)
	}
	renameMu.Lock()
	defer renameMu.Unlock()
	od.dropChildLocked(from.Name, old)
	if victim != nil {
		nd.dropChildLocked(to.Name, victim)
		if !exchange {
			defer unlinked(victim) // replaced: a name of it is gone
		}
	}
	if nd.children == nil {
		nd.children = make(map[string]*Dentry)
	}
	old.name, old.parent = to.Name, nd
	nd.children[to.Name] = old
	delete(nd.absent, to.Name)
	if exchange {
		victim.name, victim.parent = from.Name, od
		if od.children == nil {
			od.children = make(map[string]*Dentry)
		}
		od.children[from.Name] = victim
	}
	return nil
}

// isAncestor reports whether a is d or one of its ancestors in d's file
// system; renameMu is held.
func isAncestor(a, d *Dentry) bool {
	for ; d != nil; d = d.parent {
		if d == a {
			return true
		}
	}
	return false
}
