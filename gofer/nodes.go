package gofer

import "golang.org/x/sys/unix"

// maxHeld bounds the host fds one client can make the gofer hold, so a
// runaway or hostile sentry gets ENFILE instead of exhausting the gofer.
const maxHeld = 1 << 20

// node is a host file held open with O_PATH.
//
// A node remembers its parent and its name there. A file other than a
// directory is re-opened for I/O through its parent (see reopen), so that
// parent stays open as long as the child does, even after the client
// released it: refs counts the client's handle (until Release) plus one
// per such child. A directory is re-opened as "." beneath itself and holds
// no parent open: a chain of directories costs a descriptor for each
// directory the client holds, not for every one above it, so a client can
// give back the nodes of directories it is not using however deep the
// tree.
type node struct {
	fd       int
	parent   *node  // nil for the root; held open only if holdsParent
	name     string // in parent; "" once removed from it (or never named)
	dev, ino uint64
	mode     uint32
	refs     int
	// path is the host path of a root that is a single file, which has
	// no directory here to be reopened through. The caller trusts it.
	path string
}

// holdsParent says whether n keeps its parent open: a file other than a
// directory, which is reopened through it.
func (n *node) holdsParent() bool {
	return n.parent != nil && n.mode&unix.S_IFMT != unix.S_IFDIR
}

func (s *session) lookup(id NodeID) (*node, error) {
	n, ok := s.nodes[id]
	if !ok {
		return nil, unix.EBADF
	}
	return n, nil
}

// add takes ownership of fd, a child of parent, and hands out a fresh ID
// for it. Each successful Walk gets its own ID, to be released once.
func (s *session) add(parent *node, name string, fd int, st *unix.Stat_t) NodeID {
	s.held++
	s.last++
	n := &node{
		fd: fd, parent: parent, name: name,
		dev: st.Dev, ino: st.Ino, mode: st.Mode,
		refs: 1,
	}
	if n.holdsParent() {
		parent.refs++
	}
	s.nodes[s.last] = n
	if name != "" {
		k := keyOf(parent, name)
		s.byName[k] = append(s.byName[k], n)
	}
	return s.last
}

// nameKey is a name in a directory, the directory known by its identity:
// two nodes walked to one directory hold the same names.
type nameKey struct {
	dev, ino uint64
	name     string
}

func keyOf(dir *node, name string) nameKey { return nameKey{dir.dev, dir.ino, name} }

// unindex forgets that n is known by its name.
func (s *session) unindex(n *node) {
	if n.parent == nil || n.name == "" {
		return
	}
	k := keyOf(n.parent, n.name)
	list := s.byName[k]
	for i, m := range list {
		if m == n {
			list = append(list[:i], list[i+1:]...)
			break
		}
	}
	if len(list) == 0 {
		delete(s.byName, k)
	} else {
		s.byName[k] = list
	}
}

// detach marks the nodes walked to a removed name as nameless.
func (s *session) detach(k nameKey) {
	for _, n := range s.byName[k] {
		n.name = ""
	}
	delete(s.byName, k)
}

// move gives nodes, renamed, their new place: dir and k's name.
func (s *session) move(nodes []*node, dir *node, k nameKey) {
	for _, n := range nodes {
		if n.parent != dir && n.holdsParent() {
			dir.refs++
			old := n.parent
			n.parent = dir
			s.unref(old) // never the last reference: the rename named it
		}
		n.parent, n.name = dir, k.name
	}
	if len(nodes) > 0 {
		s.byName[k] = append(s.byName[k], nodes...)
	}
}

// release drops the client's handle on id. Unknown IDs and the root are
// ignored: Release has no answer that could carry an error.
func (s *session) release(id NodeID) {
	n, ok := s.nodes[id]
	if !ok || id == RootNode {
		return
	}
	delete(s.nodes, id)
	s.unref(n)
}

// unref drops one reference and closes n if this leaves it unreferenced,
// and then its parent if n held it open and was its last holder.
func (s *session) unref(n *node) {
	for n != nil {
		if n.refs--; n.refs > 0 {
			return
		}
		s.unindex(n)
		unix.Close(n.fd)
		s.held--
		if !n.holdsParent() {
			return
		}
		n = n.parent
	}
}

// closeAll closes every fd the session holds. Parents kept only for their
// children are reached through the chains of the nodes still in the table.
// Calling it again does nothing.
func (s *session) closeAll() {
	root := s.nodes[RootNode]
	for id, n := range s.nodes {
		if id != RootNode {
			s.unref(n)
		}
	}
	clear(s.nodes)
	s.unref(root)
}
