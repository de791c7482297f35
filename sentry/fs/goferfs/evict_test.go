package goferfs

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/sentry/vfs"
)

// openFDs counts the test process's descriptors: the in-process gofer's
// nodes are among them.
func openFDs(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(ents)
}

func TestNodesOfIdleFilesAreGivenBack(t *testing.T) {
	dir := t.TempDir()
	root := served(t, dir)
	const maxAttached = 1000
	root.Dentry.Inode().(*inode).fs.maxAttached = maxAttached
	c := me()
	before := openFDs(t)
	const files = maxAttached + 600
	for k := 0; k < files; k++ {
		p, err := vfs.Create(c, target(t, root, fmt.Sprintf("/f%05d", k)), 0o644)
		ok(t, err)
		impl, err := p.Dentry.Inode().Open(unix.O_WRONLY)
		ok(t, err)
		f := vfs.NewFile(impl, p, unix.O_WRONLY)
		if _, err := f.Write(vfs.NewIOSeqBuffer([]byte(fmt.Sprint(k)))); err != nil {
			t.Fatal(err)
		}
		f.DecRef()
	}
	if grew := openFDs(t) - before; grew > maxAttached+maxTrimSteps {
		t.Fatalf("%d files made, none open: %d more descriptors held, want at most %d", files, grew, maxAttached+maxTrimSteps)
	}

	// The oldest files gave their nodes back; each is walked to again when
	// needed: its attributes, a change, a rename and then an open by the
	// new name, a removal.
	first := lookup(t, root, "/f00000").Dentry.Inode().(*inode)
	if first.node != detached {
		t.Fatal("the oldest idle file still holds its node")
	}
	ok(t, vfs.Chmod(c, lookup(t, root, "/f00001"), 0o600))
	if st := stat(t, lookup(t, root, "/f00001")); st.Mode != unix.S_IFREG|0o600 {
		t.Errorf("mode after chmod of a file walked to again: %o", st.Mode)
	}
	ok(t, vfs.Rename(c, target(t, root, "/f00002"), target(t, root, "/moved"), 0))
	p := lookup(t, root, "/moved")
	impl, err := p.Dentry.Inode().Open(unix.O_RDONLY)
	ok(t, err)
	buf := make([]byte, 8)
	n, err := impl.Read(vfs.NewIOSeqBuffer(buf), 0)
	impl.Release()
	if err != nil || string(buf[:n]) != "2" {
		t.Errorf("read of a renamed file walked to again: %q, %v", buf[:n], err)
	}
	ok(t, vfs.Unlink(c, target(t, root, "/f00003")))
	if _, err := os.Stat(filepath.Join(dir, "f00003")); !os.IsNotExist(err) {
		t.Errorf("host file after unlink: %v", err)
	}

	// A name the host gave to another file behind the sandbox is stale.
	// (The new file is made before the old goes, so that the host cannot
	// give it the old one's inode number, which would pass for the same
	// file.)
	p4 := lookup(t, root, "/f00004")
	ok(t, os.WriteFile(filepath.Join(dir, "other"), []byte("other"), 0o644))
	ok(t, os.Rename(filepath.Join(dir, "other"), filepath.Join(dir, "f00004")))
	if err := vfs.Chmod(c, p4, 0o600); err != unix.ESTALE {
		t.Errorf("chmod of a file the host replaced: %v, want ESTALE", err)
	}
	if st, _ := os.Stat(filepath.Join(dir, "f00004")); st.Mode().Perm() != 0o644 {
		t.Errorf("the host's new file was changed: mode %o", st.Mode().Perm())
	}
}

// TestAHardLinkKeepsTheNameItWasFoundBy: a file given back and found
// again by another of its names is walked to by that one; removing the
// first name leaves it reachable.
func TestAHardLinkKeepsTheNameItWasFoundBy(t *testing.T) {
	dir := t.TempDir()
	ok(t, os.WriteFile(filepath.Join(dir, "a"), []byte("x"), 0o644))
	ok(t, os.Link(filepath.Join(dir, "a"), filepath.Join(dir, "b")))
	root := served(t, dir)
	const maxAttached = 50
	root.Dentry.Inode().(*inode).fs.maxAttached = maxAttached
	c := me()
	fill := func(round int) { // idle files enough to give the oldest nodes back
		for k := 0; k < 2*maxAttached; k++ {
			_, err := vfs.Create(c, target(t, root, fmt.Sprintf("/r%d-%03d", round, k)), 0o644)
			ok(t, err)
		}
	}
	a := lookup(t, root, "/a").Dentry.Inode().(*inode)
	fill(0)
	if a.node != detached {
		t.Fatal("a still holds its node")
	}
	if lookup(t, root, "/b").Dentry.Inode().(*inode) != a {
		t.Fatal("b is not a's inode")
	}
	ok(t, vfs.Unlink(c, target(t, root, "/a")))
	fill(1)
	if err := vfs.Chmod(c, lookup(t, root, "/b"), 0o600); err != nil {
		t.Errorf("chmod of the name left, after the other was removed and the node given back: %v", err)
	}
}
