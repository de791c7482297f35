package gofer

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestDirectoriesHoldNoParents walks down a chain of directories, giving
// back each node once its child is walked: the gofer then holds the root
// and the deepest directory only, however deep the chain. A file holds its
// directory, through which it is reopened, until the file is given back;
// the directory's own node, given back first, still lists it.
func TestDirectoriesHoldNoParents(t *testing.T) {
	root := t.TempDir()
	const depth = 200
	deep := filepath.Join(root, strings.Repeat("d/", depth))
	must(t, os.MkdirAll(deep, 0o755))
	must(t, os.WriteFile(filepath.Join(deep, "f"), []byte("f"), 0o644))
	s := newTestSession(t, root, false)
	walkTo := func(dir NodeID, name string) NodeID {
		t.Helper()
		s.out = s.out[:0]
		must(t, s.walk(dir, name))
		return s.last
	}
	dir := RootNode
	for k := 0; k < depth; k++ {
		next := walkTo(dir, "d")
		s.release(dir)
		dir = next
	}
	if s.held != 2 {
		t.Fatalf("%d directories walked, all but the last given back: %d descriptors held, want 2 (the root's and the last's)", depth, s.held)
	}
	names, _, err := s.listNames(s.nodes[dir])
	must(t, err)
	if len(names) != 1 || names[0] != "f" {
		t.Fatalf("the deepest directory lists %q, want f", names)
	}

	f := walkTo(dir, "f")
	s.release(dir)
	if s.held != 3 {
		t.Errorf("a file whose directory was given back: %d descriptors held, want 3 (the root, the file, its directory)", s.held)
	}
	fd, err := s.open(f, unix.O_RDONLY)
	must(t, err)
	unix.Close(fd)
	s.release(f)
	if s.held != 1 {
		t.Errorf("everything given back: %d descriptors held, want 1 (the root's)", s.held)
	}
}

// TestRemovedDirectoryRefusesNames: a directory's node whose name was
// removed refuses to be listed (ESTALE) and to have names made in it
// (ENOENT, as Linux says for a removed directory).
func TestRemovedDirectoryRefusesNames(t *testing.T) {
	root := t.TempDir()
	must(t, os.Mkdir(filepath.Join(root, "gone"), 0o755))
	c := serveTree(t, root, false)
	gone := walk(t, c, RootNode, "gone")
	must(t, errOf(c.Unlink(RootNode, "gone", unix.AT_REMOVEDIR)))
	_, err := c.ReadDir(gone)
	wantErrno(t, "list a removed directory", err, unix.ESTALE)
	_, _, _, err = c.Mkdir(gone, "x", 0o755, uint32(os.Getuid()), uint32(os.Getgid()))
	wantErrno(t, "mkdir in a removed directory", err, unix.ENOENT)
}
