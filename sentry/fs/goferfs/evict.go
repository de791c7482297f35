package goferfs

import (
	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/gofer"
)

// Every node the sentry holds is a descriptor the gofer keeps open, and vfs
// keeps every dentry, with its inode, for the file system's life: a guest
// that made 100,000 files on a bind mount ran the gofer out of descriptors
// at its RLIMIT_NOFILE (20,000 here), and its creates failed with EMFILE,
// the file made on the host all the same; one that made 20,000 directories
// (npm install, tar x, mkdir -p of a wide tree) failed the same way. So
// the node of a file reached by a name, directories included, is given
// back once more than fs.maxAttached such nodes are held (oldest first, a
// file used since its last turn given another; a removed one first of
// all), and the file is walked to again by its name when it is next
// needed, from its directory, itself walked to again first if it gave its
// node back too. A node stays while the file is open (a directory's open
// descriptor included), mapped, in use by a call, or known by several
// nodes (hard links); a directory's also while a file in it holds a node,
// since the gofer keeps a file's directory open to reopen the file through
// (gofer/nodes.go) and giving the directory's node back would free
// nothing. What a directory's walk (prefetch.go) holds and has not handed
// over counts too, and is given back before any node (but the newest
// walk's, while there are nodes to give back), the oldest walk first, and
// with the directory's node.
//
// A working directory or a mount point holds nothing here (vfs keeps
// their dentries, not the gofer's nodes): each is walked to again by name
// when next used, which the sandbox's own renames keep right; one the host
// renamed behind the sandbox is then stale (ESTALE), as any file is.

// attachedLimit is how many such nodes a tree keeps: three quarters of the
// descriptors the gofer may have open, the rest left for nodes in use, the
// other names of hard links and the descriptors it opens to hand over. The gofer's limit is this
// process's: the CLI starts both with its own, and Go raises both soft
// limits to the hard one.
var attachedLimit = func() int {
	var r unix.Rlimit
	if unix.Getrlimit(unix.RLIMIT_NOFILE, &r) != nil || r.Max == unix.RLIM_INFINITY {
		return 4096
	}
	return int(min(max(r.Max/4*3, 256), 1<<20))
}()

// detached is the node of a file whose node was given back: the gofer
// never hands out 0 (RootNode is 1).
const detached gofer.NodeID = 0

// maxTrimSteps bounds the files one trim looks at, so that a guest holding
// more than fs.maxAttached files open costs each new node a bounded walk of
// the list, not all of it.
const maxTrimSteps = 64

// dirName is a name in a directory of the tree.
type dirName struct {
	dir  *inode
	name string
}

// nodeList is the files whose nodes may be given back, oldest first.
type nodeList struct {
	head, tail *inode
	n          int
}

func (l *nodeList) pushBack(i *inode) {
	i.prev, i.next, i.listed = l.tail, nil, true
	if l.tail != nil {
		l.tail.next = i
	} else {
		l.head = i
	}
	l.tail = i
	l.n++
}

// remove takes i, which is listed, out of the list.
func (l *nodeList) remove(i *inode) {
	if i.prev != nil {
		i.prev.next = i.next
	} else {
		l.head = i.next
	}
	if i.next != nil {
		i.next.prev = i.prev
	} else {
		l.tail = i.prev
	}
	i.prev, i.next, i.listed = nil, nil, false
	l.n--
}

// pushFront puts i, not listed, first.
func (l *nodeList) pushFront(i *inode) {
	i.prev, i.next, i.listed = nil, l.head, true
	if l.head != nil {
		l.head.prev = i
	} else {
		l.tail = i
	}
	l.head = i
	l.n++
}

func (l *nodeList) popFront() *inode {
	i := l.head
	if i == nil {
		return nil
	}
	l.head = i.next
	if l.head != nil {
		l.head.prev = nil
	} else {
		l.tail = nil
	}
	i.prev, i.next, i.listed = nil, nil, false
	l.n--
	return i
}

// track records that i, whose node was just walked to name in dir, is
// known by that name, and that its node may be given back.
func (f *fs) track(i *inode, dir *inode, name string) {
	i.nodeMu.Lock()
	i.parent, i.name = dir, name
	i.heldByLocked(dir)
	i.nodeMu.Unlock()
	f.lruMu.Lock()
	f.names[dirName{dir, name}] = i
	f.lruMu.Unlock()
	f.list(i)
}

// list puts i, which holds a node again, at the end of the list, and gives
// back the oldest nodes past fs.maxAttached.
func (f *fs) list(i *inode) {
	f.lruMu.Lock()
	if !i.listed {
		f.lru.pushBack(i)
	}
	f.lruMu.Unlock()
	f.trim()
}

// trim gives back the nodes of the oldest files not in use while more than
// fs.maxAttached are held, counting what directories' walks hold.
func (f *fs) trim() {
	for step := 0; step < maxTrimSteps; step++ {
		f.lruMu.Lock()
		if f.lru.n+int(f.walkHeld.Load()) <= f.maxAttached {
			f.lruMu.Unlock()
			return
		}
		if len(f.walks) > 1 || len(f.walks) == 1 && f.lru.n == 0 {
			// What a walk holds is a guess at what is looked up next:
			// it goes first, the oldest walk first, but for the newest,
			// whose names are being looked up now, while nodes are
			// left to give back.
			w := f.walks[0]
			f.walks = f.walks[1:]
			f.lruMu.Unlock()
			w.dropWalk()
			continue
		}
		if f.lru.n == 0 {
			f.lruMu.Unlock()
			return
		}
		i := f.lru.popFront()
		if i.recent.Swap(false) {
			f.lru.pushBack(i) // used since its last turn: another turn
			f.lruMu.Unlock()
			continue
		}
		f.lruMu.Unlock()
		if !i.detach() {
			f.lruMu.Lock()
			if !i.listed {
				f.lru.pushBack(i)
			}
			f.lruMu.Unlock()
		}
	}
}

// detach gives back i's node, unless the file is open, mapped, in use,
// known by several nodes (hard links), or a directory a file in which
// holds a node, and reports whether it did. A file whose name is gone is
// forgotten (the host may give its inode number to a new file), its
// attributes asked first if a change made them old: nothing can change
// them since, and they are all a working directory that was removed still
// answers with.
//
// trim calls it from wherever a node was added, with whatever locks the
// caller holds (a rewalk holds its file's nodeMu while its directory is
// walked to again): a lock it cannot take at once means the file is in use.
func (i *inode) detach() bool {
	if !i.nodeMu.TryLock() {
		return false
	}
	if i.node == detached || i.pins > 0 || len(i.other) > 0 || i.opens.Load() > 0 || i.pages.Load() != nil ||
		i.kids.Load() > 0 {
		i.nodeMu.Unlock()
		return false
	}
	n, gone := i.node, i.name == ""
	if gone && !i.finalAttrLocked() {
		i.nodeMu.Unlock()
		return false
	}
	i.node = detached
	if h := i.holder; h != nil {
		h.kids.Add(-1)
		i.holder = nil
	}
	i.nodeMu.Unlock()
	if gone {
		f := i.fs
		f.filesMu.Lock()
		if f.files[i.id] == i {
			delete(f.files, i.id)
		}
		f.filesMu.Unlock()
	}
	i.dropWalk()
	i.fs.client.Release(n)
	return true
}

// finalAttrLocked asks the attributes of a file whose name is gone, if a
// change made them old, before its node goes (nodeMu held); false if the
// attributes are in use now.
func (i *inode) finalAttrLocked() bool {
	if !i.attrMu.TryLock() {
		return false
	}
	defer i.attrMu.Unlock()
	if i.stale {
		if a, err := i.fs.client.Stat(i.node); err == nil {
			i.rememberLocked(i.fs.stat(a))
			i.stale = false
		}
	}
	return true
}

// heldByLocked records that i's node was walked to from directory dir
// (nil: from none), which the gofer keeps open for it if i is not a
// directory itself (nodeMu held).
func (i *inode) heldByLocked(dir *inode) {
	if dir == nil || i.typ == unix.S_IFDIR || i.holder != nil {
		return
	}
	i.holder = dir
	dir.kids.Add(1)
}

// pin returns i's nodes, the first the one to try first, walking to the
// file again by its name if its node was given back; they stay until
// unpin.
func (i *inode) pin() ([]gofer.NodeID, error) {
	i.nodeMu.Lock()
	walked := false
	if i.node == detached {
		if err := i.rewalkLocked(); err != nil {
			i.nodeMu.Unlock()
			return nil, err
		}
		walked = true
	}
	i.pins++
	nodes := append([]gofer.NodeID{i.node}, i.other...)
	i.nodeMu.Unlock()
	i.recent.Store(true)
	if walked {
		i.fs.list(i)
	}
	return nodes, nil
}

func (i *inode) unpin() {
	i.nodeMu.Lock()
	i.pins--
	i.nodeMu.Unlock()
}

// withNode calls fn with the first of i's nodes, for calls that work on
// any node of the file (stat, readlink, link, statfs).
func (i *inode) withNode(fn func(gofer.NodeID) error) error {
	nodes, err := i.pin()
	if err != nil {
		return err
	}
	defer i.unpin()
	return fn(nodes[0])
}

// rewalkLocked walks to i again by its name (nodeMu held), from its
// directory, which is walked to again first if need be: the lock order is
// a file's before its directory's. A file whose name the sandbox removed
// is not found (ENOENT, what Linux answers for a name made in a removed
// directory); one whose name is gone from the host, or now names another
// file, is stale (ESTALE): the host changed the tree behind the sandbox.
func (i *inode) rewalkLocked() error {
	if i.parent == nil || i.name == "" {
		return unix.ENOENT
	}
	dir := i.parent
	return dir.withNode(func(dn gofer.NodeID) error {
		n, a, err := i.fs.client.Walk(dn, i.name)
		if err == unix.ENOENT {
			return unix.ESTALE
		}
		if err != nil {
			return err
		}
		if (hostID{a.Dev, a.Ino}) != i.id {
			i.fs.client.Release(n)
			return unix.ESTALE
		}
		i.node = n
		i.heldByLocked(dir) // while dir is pinned: it cannot give its node back meanwhile
		return nil
	})
}

// moveName records that the name i is known by, if it is fromName in
// fromDir, is now toName in toDir (toDir nil: gone). A file with hard
// links is known by one of its names: a change to another leaves it be.
// The gofer moves the node walked to the name with it, and keeps a removed
// one's directory open for it still.
func (i *inode) moveName(fromDir *inode, fromName string, toDir *inode, toName string) {
	i.nodeMu.Lock()
	if i.parent == fromDir && i.name == fromName {
		i.parent, i.name = toDir, toName
		if h := i.holder; h != nil && toDir != nil && h != toDir {
			h.kids.Add(-1)
			i.holder = nil
			i.heldByLocked(toDir)
		}
	}
	i.nodeMu.Unlock()
}

// removed records that name in dir is gone: its file's node, unless in
// use, is the first to be given back.
func (f *fs) removed(dir *inode, name string) {
	k := dirName{dir, name}
	f.lruMu.Lock()
	i := f.names[k]
	delete(f.names, k)
	if i != nil && i.listed {
		f.lru.remove(i)
		f.lru.pushFront(i)
		i.recent.Store(false)
	}
	f.lruMu.Unlock()
	if i != nil {
		i.moveName(dir, name, nil, "")
	}
}

// renamed records a rename of oldName in od to newName in nd: the file
// named there before is gone, or, with RENAME_EXCHANGE, has the old name.
func (f *fs) renamed(od *inode, oldName string, nd *inode, newName string, flags uint32) {
	from, to := dirName{od, oldName}, dirName{nd, newName}
	f.lruMu.Lock()
	moved, over := f.names[from], f.names[to]
	delete(f.names, from)
	delete(f.names, to)
	if moved != nil {
		f.names[to] = moved
	}
	exchange := flags&unix.RENAME_EXCHANGE != 0
	if exchange && over != nil {
		f.names[from] = over
	}
	f.lruMu.Unlock()
	if moved != nil {
		moved.moveName(od, oldName, nd, newName)
	}
	if over != nil && over != moved {
		if exchange {
			over.moveName(nd, newName, od, oldName)
		} else {
			over.moveName(nd, newName, nil, "")
		}
	}
}
