package goferfs

import (
	"time"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/gofer"
)

// A directory in which look-ups miss more than once is walked whole, in
// one round trip (gofer's WalkDir): git status lstat's every file of each
// directory, a dynamic loader and an interpreter probe dozens of names,
// and each would otherwise be a round trip of its own. The first miss is a
// single walk, so that the directories a path merely passes through are
// not walked whole.

// negativeTTL is how long a writable tree's walk is trusted to say a name
// is absent: the host may add names behind the sandbox (a read-only tree,
// an image, never changes).
const negativeTTL = 2 * time.Second

// prefetch is what the walk of a directory told of its entries not yet
// looked up.
type prefetch struct {
	misses   int // look-ups that went to the gofer before the walk
	walked   bool
	complete bool // entries are every one the directory had
	at       time.Time
	// ctime is the directory's change time when what the walk knows was
	// last known true (a directory the sandbox made: as made), zero when
	// unknown (a walk of the gofer's): a change of a name the sandbox makes
	// in it that finds it so renews the walk's trust (changed).
	ctime   unix.Timespec
	entries map[string]gofer.WalkEntry
	// handed are the names whose entries were handed over: the walk saw
	// them, so a look-up of one again (the overlay asks its lower layer
	// whether a name it removes is there) goes to the gofer instead of
	// being answered absent.
	handed map[string]bool
}

// prefetched answers a look-up of name from the directory's walk: known
// says the walk knew (found or not); an entry found is handed over once,
// and later look-ups of its name are the gofer's to answer.
func (i *inode) prefetched(dn gofer.NodeID, name string) (e gofer.WalkEntry, found, known bool) {
	i.pfMu.Lock()
	defer i.pfMu.Unlock()
	pf := &i.pf
	if !pf.walked {
		if pf.misses++; pf.misses < 2 {
			return e, false, false
		}
		pf.walked = true
		entries, complete, err := i.fs.client.WalkDir(dn)
		if err != nil {
			return e, false, false
		}
		pf.complete, pf.at = complete, time.Now()
		pf.entries = make(map[string]gofer.WalkEntry, len(entries))
		for _, e := range entries {
			pf.entries[e.Name] = e
		}
		if len(entries) > 0 {
			i.fs.walkHeld.Add(int64(len(entries)))
			i.fs.lruMu.Lock()
			i.fs.walks = append(i.fs.walks, i)
			i.fs.lruMu.Unlock()
		}
	}
	if e, ok := pf.entries[name]; ok {
		delete(pf.entries, name)
		i.fs.walkHeld.Add(-1)
		if pf.handed == nil {
			pf.handed = make(map[string]bool)
		}
		pf.handed[name] = true
		return e, true, true
	}
	if pf.complete && !pf.handed[name] && (i.fs.readonly || time.Since(pf.at) < negativeTTL) {
		return e, false, true
	}
	return e, false, false
}

// madeEmpty records that directory i was just made by the sandbox, and so
// has no entries, with change time ctime: look-ups in it are answered as a
// complete walk of it would answer them, for as long (negativeTTL), without
// the walk. An agent unpacking or cloning a tree makes each name in a
// directory it just made, and each name made is first looked up (vfs:
// EEXIST if it is there).
func (i *inode) madeEmpty(ctime unix.Timespec) {
	i.pfMu.Lock()
	i.pf = prefetch{walked: true, complete: true, at: time.Now(), ctime: ctime}
	i.pfMu.Unlock()
}

// changed records what a change of a name the sandbox made did to
// directory i: its attributes now, and, when its change time just before
// was the one the walk's knowledge was last true at, that nothing else
// changed the directory meanwhile, so that the walk (with the sandbox's own
// changes, which vfs and forget track) still knows every name and is
// trusted for negativeTTL more. This is the 2 s of the walk renewed by what
// the host tells of the directory, as NFS keeps its cache of a directory
// while the attributes its own changes answer with (weak cache
// consistency) show no one else's. A host that changes the directory in
// the instant between the gofer's look and its change goes unseen, and so
// does one whose clock gives two changes one change time (before Linux
// 6.13's multigrain timestamps, one in the same tick).
func (i *inode) changed(ch gofer.DirChange) {
	if ch.After.Ino == 0 {
		// The gofer could not read the directory after the change.
		i.markStale()
		i.pfMu.Lock()
		i.pf.ctime = unix.Timespec{}
		i.pfMu.Unlock()
		return
	}
	i.pfMu.Lock()
	pf := &i.pf
	if pf.ctime != (unix.Timespec{}) && pf.ctime == ch.Before {
		pf.at = time.Now()
		pf.ctime = ch.After.Ctime
	} else {
		// Changed behind the sandbox, or not known not to be: the walk
		// answers for no absent name from now on.
		pf.ctime, pf.at = unix.Timespec{}, time.Time{}
	}
	i.pfMu.Unlock()
	i.setAttr(ch.After)
}

// existed takes back what the walk of directory i said of name when the
// host, asked to make it, answered EEXIST (err): the name was made behind
// the sandbox since, and the next look-up of it is the gofer's to answer.
// The host decides, atomically, whether a name is new (O_EXCL); the walk
// only spares asking it first.
func (i *inode) existed(name string, err error) {
	if err != unix.EEXIST {
		return
	}
	i.pfMu.Lock()
	defer i.pfMu.Unlock()
	if !i.pf.complete {
		return // the walk answers for no absent name
	}
	if i.pf.handed == nil {
		i.pf.handed = make(map[string]bool)
	}
	i.pf.handed[name] = true
}

// lookupNode finds name in directory i, whose node is dn: from its walk,
// or by a walk of its own.
func (i *inode) lookupNode(dn gofer.NodeID, name string) (gofer.NodeID, gofer.Attr, error) {
	if e, found, known := i.prefetched(dn, name); known {
		if !found {
			return 0, gofer.Attr{}, unix.ENOENT
		}
		return e.Node, e.Attr, nil
	}
	return i.fs.client.Walk(dn, name)
}

// forget drops what the walk of directory i told of names, which a change
// the sandbox made has made old (a name the walk saw may have been looked up
// before it, and removed since without a look-up). An entry never handed
// over gives its node back.
func (i *inode) forget(names ...string) {
	i.pfMu.Lock()
	var unused []gofer.NodeID
	for _, n := range names {
		if e, ok := i.pf.entries[n]; ok {
			unused = append(unused, e.Node)
			delete(i.pf.entries, n)
		}
	}
	i.pfMu.Unlock()
	if len(unused) > 0 {
		i.fs.walkHeld.Add(-int64(len(unused)))
		i.fs.client.Release(unused...)
	}
}

// dropWalk gives back the nodes directory i's walk holds and has not
// handed over, and forgets the walk, which without them cannot answer for
// their names: the next look-ups start over.
func (i *inode) dropWalk() {
	i.pfMu.Lock()
	var unused []gofer.NodeID
	for _, e := range i.pf.entries {
		unused = append(unused, e.Node)
	}
	if len(unused) > 0 {
		i.pf = prefetch{}
	}
	i.pfMu.Unlock()
	if len(unused) > 0 {
		i.fs.walkHeld.Add(-int64(len(unused)))
		i.fs.client.Release(unused...)
	}
}
