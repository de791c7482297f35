package vfs

import (
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// The events vfs's operations report to inotify watches (inotify.go), in
// the order Linux's fsnotify hooks send them. Every function here returns
// at once while no watch exists.

// cookies numbers renames, so that a watcher can pair IN_MOVED_FROM with
// IN_MOVED_TO.
var cookies atomic.Uint32

func nextCookie() uint32 {
	for {
		if c := cookies.Add(1); c != 0 {
			return c
		}
	}
}

// dirFlag is IN_ISDIR for a directory.
func dirFlag(isDir bool) uint32 {
	if isDir {
		return unix.IN_ISDIR
	}
	return 0
}

// notifyFile reports an event about the open file f: IN_OPEN, IN_ACCESS,
// IN_MODIFY or IN_CLOSE_*, to its directory's watches (with its name)
// and its own (fsnotify_file).
func (f *File) notify(mask uint32) {
	d := f.path.Dentry
	if !watching() || d == nil || f.Flags()&unix.O_PATH != 0 {
		return
	}
	notifyDentry(d, mask|dirFlag(d.isDir), f.ID(), d)
}

// notifyDentry reports mask about the inode of d (whose identity is id)
// to d's directory and to the inode's watches; from is set for an event
// about an open file.
func notifyDentry(d *Dentry, mask uint32, id FileID, from *Dentry) {
	renameMu.RLock()
	parent, name := d.parent, d.name
	renameMu.RUnlock()
	if parent != nil {
		if pid, ok := inodeID(parent.inode); ok {
			deliver(pid, mask, 0, name, from)
		}
	}
	deliver(id, mask, 0, "", from)
}

// notifyAttr reports a change of attributes made through a path
// (fsnotify_change): a size change is IN_MODIFY, a change of both times
// IN_ATTRIB, of one IN_ACCESS or IN_MODIFY, of owner or mode IN_ATTRIB.
func notifyAttr(d *Dentry, a *Attr) {
	if !watching() || d == nil {
		return
	}
	var mask uint32
	if a.Mask&(SetUID|SetGID|SetMode) != 0 {
		mask |= unix.IN_ATTRIB
	}
	if a.Mask&SetSize != 0 {
		mask |= unix.IN_MODIFY
	}
	switch a.Mask & (SetAtime | SetMtime) {
	case SetAtime | SetMtime:
		mask |= unix.IN_ATTRIB
	case SetAtime:
		mask |= unix.IN_ACCESS
	case SetMtime:
		mask |= unix.IN_MODIFY
	}
	if mask == 0 {
		return
	}
	if id, ok := inodeID(d.inode); ok {
		notifyDentry(d, mask|dirFlag(d.isDir), id, nil)
	}
}

// notifyXattr reports a change of extended attributes (IN_ATTRIB, as
// Linux's fsnotify_xattr).
func notifyXattr(d *Dentry) {
	if !watching() || d == nil {
		return
	}
	if id, ok := inodeID(d.inode); ok {
		notifyDentry(d, unix.IN_ATTRIB|dirFlag(d.isDir), id, nil)
	}
}

// events collects what a change of names reports, to send once the
// change's locks are released (a deferred send registered before them).
type events struct {
	on   bool
	list []pendingEvent
}

type pendingEvent struct {
	dir     *Dentry // for an event about a name in dir
	d       *Dentry // for an event about d's inode
	mask    uint32
	name    string
	cookie  uint32
	deleted bool // d's inode lost its last name
}

// newEvents returns a collector, which collects nothing while no watch
// exists.
func newEvents() *events { return &events{on: watching()} }

// name reports mask about name in dir.
func (e *events) name(dir *Dentry, mask uint32, name string, cookie uint32) {
	if e.on {
		e.list = append(e.list, pendingEvent{dir: dir, mask: mask, name: name, cookie: cookie})
	}
}

// inode reports mask about d's inode to its own watches.
func (e *events) inode(d *Dentry, mask uint32) {
	if e.on {
		e.list = append(e.list, pendingEvent{d: d, mask: mask})
	}
}

// removed notes that d's inode lost its last name: IN_DELETE_SELF, now
// or at the last close of a file open on it.
func (e *events) removed(d *Dentry) {
	if e.on {
		e.list = append(e.list, pendingEvent{d: d, deleted: true})
	}
}

// lastLink reports whether removing d's name removes its inode, while
// someone watches (a directory always; a file with one link).
func (e *events) lastLink(d *Dentry) bool {
	if !e.on {
		return false
	}
	if d.isDir {
		return true
	}
	st, err := d.inode.Stat()
	return err == nil && st.Nlink <= 1
}

// send delivers the collected events.
func (e *events) send() {
	for _, ev := range e.list {
		switch {
		case ev.dir != nil:
			if id, ok := inodeID(ev.dir.inode); ok {
				deliver(id, ev.mask, ev.cookie, ev.name, nil)
			}
		case ev.deleted:
			if id, ok := inodeID(ev.d.inode); ok {
				ev.d.goneID.Store(&id)
				if ev.d.opens.Load() == 0 {
					ev.d.deleteSelf()
				}
			}
		default:
			if id, ok := inodeID(ev.d.inode); ok {
				deliver(id, ev.mask, 0, "", nil)
			}
		}
	}
}

// deleteSelf sends IN_DELETE_SELF for d's removed inode, once, and drops
// its watches.
func (d *Dentry) deleteSelf() {
	id := d.goneID.Swap(nil)
	if id == nil {
		return
	}
	deliver(*id, unix.IN_DELETE_SELF, 0, "", nil)
	dropWatches(*id)
}

// opened counts a file open on d (NewFile) and reports IN_OPEN.
func (f *File) opened() {
	if d := f.path.Dentry; d != nil {
		d.opens.Add(1)
		f.notify(unix.IN_OPEN)
	}
}

// closed reports IN_CLOSE_WRITE or IN_CLOSE_NOWRITE at f's last close,
// then IN_DELETE_SELF if it was the last open of a removed file.
func (f *File) closed() {
	d := f.path.Dentry
	if d == nil {
		return
	}
	if f.Writable() && f.Flags()&unix.O_PATH == 0 {
		f.notify(unix.IN_CLOSE_WRITE)
	} else {
		f.notify(unix.IN_CLOSE_NOWRITE)
	}
	if d.opens.Add(-1) == 0 && d.goneID.Load() != nil {
		d.deleteSelf()
	}
}

// NotifyTruncated reports IN_MODIFY for a file that open(O_TRUNC)
// truncated, after its IN_OPEN, as Linux's handle_truncate does.
func (f *File) NotifyTruncated() { f.notify(unix.IN_MODIFY) }

// renamed reports a rename of old from oldName in od to newName in nd,
// over victim (or exchanged with it), as fsnotify_move: IN_MOVED_FROM and
// IN_MOVED_TO with one cookie, the replaced file's IN_ATTRIB, the moved
// inode's IN_MOVE_SELF, and the other pair for an exchange; a replaced
// file that lost its last name goes last.
func (e *events) renamed(od *Dentry, oldName string, nd *Dentry, newName string, old, victim *Dentry, exchange, lastVictim bool) {
	if !e.on {
		return
	}
	c := nextCookie()
	e.name(od, unix.IN_MOVED_FROM|dirFlag(old.isDir), oldName, c)
	e.name(nd, unix.IN_MOVED_TO|dirFlag(old.isDir), newName, c)
	if victim != nil && !exchange && !victim.isDir {
		e.inode(victim, unix.IN_ATTRIB)
	}
	e.inode(old, unix.IN_MOVE_SELF)
	if exchange {
		c = nextCookie()
		e.name(nd, unix.IN_MOVED_FROM|dirFlag(victim.isDir), newName, c)
		e.name(od, unix.IN_MOVED_TO|dirFlag(victim.isDir), oldName, c)
		e.inode(victim, unix.IN_MOVE_SELF)
	}
	if lastVictim {
		e.removed(victim)
	}
}
