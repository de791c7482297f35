package vfs

import (
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// inotify's watches and the events vfs reports to them. A watch is on an
// inode (FileID), so it sees a file's changes through every name, mount and
// file system it is reached by; an instance (fs/inotify) owns its watches
// and queues their events. vfs reports what the guest does through it:
// names made, removed and moved (mutate.go), attributes changed (attr.go),
// files opened, read, written and closed (file.go). Changes the host makes
// behind a bind mount are not seen, as Linux's inotify does not see a
// remote file system's changes made elsewhere.
//
// Events follow Linux's fsnotify: one about a file goes to the file's
// watches and to its directory's, with the name; IN_ISDIR marks a
// directory as the subject (but for IN_DELETE_SELF and IN_MOVE_SELF); an
// inode whose last link goes sends IN_DELETE_SELF once nothing has it
// open, and its watches go with IN_IGNORED.

// WatchEvent is one event for an instance's watch.
type WatchEvent struct {
	WD     int32
	Mask   uint32
	Cookie uint32
	Name   string
}

// WatchOwner is an inotify instance: it queues the events of its watches.
// Queue may be called with the watch table locked, so it takes only the
// instance's own lock (and notifies its waiters).
type WatchOwner interface {
	Queue(ev WatchEvent)
}

// watch is one instance's watch on one inode.
type watch struct {
	owner WatchOwner
	wd    int32
	id    FileID
	mask  uint32 // events and flags (IN_ONESHOT, IN_EXCL_UNLINK), watches.mu
}

// watchTable holds every watch.
type watchTable struct {
	mu     sync.RWMutex
	byID   map[FileID][]*watch
	owners map[WatchOwner]*ownerWatches
	// count is how many watches exist: with none, reporting an event
	// costs one load.
	count atomic.Int64
}

type ownerWatches struct {
	last int32 // the last wd handed out
	wds  map[int32]*watch
}

var watches = watchTable{byID: make(map[FileID][]*watch), owners: make(map[WatchOwner]*ownerWatches)}

// Event masks of inotify(7).
const (
	inEvents = unix.IN_ALL_EVENTS
	// inKept are the bits a watch keeps: its events and how it wants them.
	inKept = inEvents | unix.IN_EXCL_UNLINK | unix.IN_ONESHOT
)

// WatchID returns the identity of the inode at p, for AddWatch.
func WatchID(p Path) (FileID, error) {
	st, err := p.Dentry.inode.Stat()
	if err != nil {
		return FileID{}, err
	}
	return FileID{Dev: st.Dev, Ino: st.Ino}, nil
}

// AddWatch is inotify_add_watch(2) once the path is resolved and the mask
// checked: o's watch on id gets mask (or mask added, with IN_MASK_ADD), or
// a new watch is made with the next watch descriptor, unless IN_MASK_CREATE
// refuses an existing watch (EEXIST).
func AddWatch(o WatchOwner, id FileID, mask uint32) (int32, error) {
	watches.mu.Lock()
	defer watches.mu.Unlock()
	ow := watches.owners[o]
	if ow == nil {
		ow = &ownerWatches{wds: make(map[int32]*watch)}
		watches.owners[o] = ow
	}
	for _, w := range watches.byID[id] {
		if w.owner != o {
			continue
		}
		if mask&unix.IN_MASK_CREATE != 0 {
			return 0, unix.EEXIST
		}
		if mask&unix.IN_MASK_ADD != 0 {
			w.mask |= mask & inKept
		} else {
			w.mask = mask & inKept
		}
		return w.wd, nil
	}
	wd := ow.last + 1
	for ow.wds[wd] != nil || wd <= 0 {
		if wd <= 0 {
			wd = 1
		} else {
			wd++
		}
	}
	ow.last = wd
	w := &watch{owner: o, wd: wd, id: id, mask: mask & inKept}
	ow.wds[wd] = w
	watches.byID[id] = append(watches.byID[id], w)
	watches.count.Add(1)
	return wd, nil
}

// RemoveWatch is inotify_rm_watch(2): the watch goes, with IN_IGNORED, or
// EINVAL if o has no watch wd.
func RemoveWatch(o WatchOwner, wd int32) error {
	watches.mu.Lock()
	defer watches.mu.Unlock()
	ow := watches.owners[o]
	if ow == nil || ow.wds[wd] == nil {
		return unix.EINVAL
	}
	removeWatchLocked(ow.wds[wd], true)
	return nil
}

// RemoveOwner drops every watch of o, at the instance's last close.
func RemoveOwner(o WatchOwner) {
	watches.mu.Lock()
	defer watches.mu.Unlock()
	ow := watches.owners[o]
	if ow == nil {
		return
	}
	for _, w := range ow.wds {
		removeWatchLocked(w, false)
	}
	delete(watches.owners, o)
}

// removeWatchLocked unregisters w, telling its owner with IN_IGNORED.
func removeWatchLocked(w *watch, ignored bool) {
	ws := watches.byID[w.id]
	for k, x := range ws {
		if x == w {
			ws = append(ws[:k:k], ws[k+1:]...)
			break
		}
	}
	if len(ws) == 0 {
		delete(watches.byID, w.id)
	} else {
		watches.byID[w.id] = ws
	}
	if ow := watches.owners[w.owner]; ow != nil {
		delete(ow.wds, w.wd)
	}
	watches.count.Add(-1)
	if ignored {
		w.owner.Queue(WatchEvent{WD: w.wd, Mask: unix.IN_IGNORED})
	}
}

// watching reports whether any watch exists.
func watching() bool { return watches.count.Load() != 0 }

// deliver sends an event to the watches of id whose mask wants it. from,
// for an event about an open file (IN_OPEN, IN_ACCESS, IN_MODIFY,
// IN_CLOSE_*), is the file's dentry: a watch with IN_EXCL_UNLINK ignores
// it once the file is unlinked. No other lock may be held: the unlink
// check takes the directory's.
func deliver(id FileID, mask, cookie uint32, name string, from *Dentry) {
	var targets []*watch
	watches.mu.RLock()
	for _, w := range watches.byID[id] {
		if w.mask&mask&inEvents != 0 {
			targets = append(targets, w)
		}
	}
	watches.mu.RUnlock()
	checked, gone := false, false
	var oneshot []*watch
	for _, w := range targets {
		if from != nil && w.mask&unix.IN_EXCL_UNLINK != 0 {
			if !checked {
				checked, gone = true, from.nameGone()
			}
			if gone {
				continue
			}
		}
		w.owner.Queue(WatchEvent{WD: w.wd, Mask: mask, Cookie: cookie, Name: name})
		if w.mask&unix.IN_ONESHOT != 0 {
			oneshot = append(oneshot, w)
		}
	}
	if len(oneshot) > 0 {
		watches.mu.Lock()
		for _, w := range oneshot {
			if ow := watches.owners[w.owner]; ow != nil && ow.wds[w.wd] == w {
				removeWatchLocked(w, true)
			}
		}
		watches.mu.Unlock()
	}
}

// dropWatches removes every watch of id, whose inode is gone, with
// IN_IGNORED.
func dropWatches(id FileID) {
	watches.mu.Lock()
	defer watches.mu.Unlock()
	for _, w := range append([]*watch(nil), watches.byID[id]...) {
		removeWatchLocked(w, true)
	}
}

// nameGone reports whether d's name is gone from its directory.
func (d *Dentry) nameGone() bool {
	renameMu.RLock()
	parent, name := d.parent, d.name
	renameMu.RUnlock()
	if parent == nil {
		return false
	}
	parent.mu.Lock()
	defer parent.mu.Unlock()
	return parent.children[name] != d
}
