package goferfs

import (
	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/gofer"
)

// Every node the sentry holds is a descriptor the gofer keeps open, and vfs
// keeps every dentry, with its inode, for the file system's life: a guest
// that made 100,000 files on a bind mount ran the gofer out of descriptors
// at its RLIMIT_NOFILE (20,000 here), and its creates failed with EMFILE,
// the file made on the host all the same. So the node of a file other than
// a directory, reached by a name, is given back once more than
// fs.maxAttached such nodes are held and no one has the file open (oldest
// first, a file used since its last turn given another), and the file is
// walked to again by its name when it is next needed. Directories keep
// theirs: their children are walked from them, and the gofer keeps a
// parent open for as long as it holds a child anyway.

// attachedLimit is how many such nodes a tree keeps: three quarters of the
// descriptors the gofer may have open, the rest left for directories and
// the descriptors it opens to hand over. The gofer's limit is this
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

// track records that i, a new file other than a directory, is name in dir,
// and that its node may be given back.
func (f *fs) track(i *inode, dir *inode, name string) {
	i.nodeMu.Lock()
	i.parent, i.name = dir, name
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
// fs.maxAttached are held.
func (f *fs) trim() {
	for step := 0; step < maxTrimSteps; step++ {
		f.lruMu.Lock()
		if f.lru.n <= f.maxAttached {
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

// detach gives back i's node, unless the file is open, mapped, in use or
// known by several nodes (hard links), and reports whether it did. A file
// whose name is gone is forgotten: the host may give its inode number to a
// new file.
func (i *inode) detach() bool {
	i.nodeMu.Lock()
	if i.node == detached || i.pins > 0 || len(i.other) > 0 || i.opens.Load() > 0 || i.pages.Load() != nil {
		i.nodeMu.Unlock()
		return false
	}
	n, gone := i.node, i.name == ""
	i.node = detached
	i.nodeMu.Unlock()
	if gone {
		f := i.fs
		f.filesMu.Lock()
		if f.files[i.id] == i {
			delete(f.files, i.id)
		}
		f.filesMu.Unlock()
	}
	i.fs.client.Release(n)
	return true
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

// rewalkLocked walks to i again by its name (nodeMu held). The file is
// stale (ESTALE) if its name is gone, or now names another file: the host
// changed the tree behind the sandbox.
func (i *inode) rewalkLocked() error {
	if i.parent == nil || i.name == "" {
		return unix.ESTALE
	}
	n, a, err := i.fs.client.Walk(i.parent.node, i.name)
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
	return nil
}

// moveName records that the name i is known by, if it is fromName in
// fromDir, is now toName in toDir (toDir nil: gone). A file with hard
// links is known by one of its names: a change to another leaves it be.
func (i *inode) moveName(fromDir *inode, fromName string, toDir *inode, toName string) {
	i.nodeMu.Lock()
	if i.parent == fromDir && i.name == fromName {
		i.parent, i.name = toDir, toName
	}
	i.nodeMu.Unlock()
}

// removed records that name in dir is gone.
func (f *fs) removed(dir *inode, name string) {
	k := dirName{dir, name}
	f.lruMu.Lock()
	i := f.names[k]
	delete(f.names, k)
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
