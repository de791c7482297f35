package goferfs

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/sentry/vfs"
)

// node returns the inode at name, reached without a call to the gofer
// once vfs knows the name.
func nodeOf(t *testing.T, root vfs.Path, name string) *inode {
	t.Helper()
	return lookup(t, root, name).Dentry.Inode().(*inode)
}

// fill makes n directories under /fill<round>, enough to push the oldest
// idle nodes out.
func fill(t *testing.T, root vfs.Path, round, n int) {
	t.Helper()
	c := me()
	top := fmt.Sprintf("/fill%d", round)
	ok(t, vfs.Mkdir(c, target(t, root, top), 0o755))
	for k := 0; k < n; k++ {
		ok(t, vfs.Mkdir(c, target(t, root, fmt.Sprintf("%s/%04d", top, k)), 0o755))
	}
}

func TestNodesOfIdleDirectoriesAreGivenBack(t *testing.T) {
	dir := t.TempDir()
	root := served(t, dir)
	const maxAttached = 200
	root.Dentry.Inode().(*inode).fs.maxAttached = maxAttached
	c := me()
	before := openFDs(t)
	const wide = 30
	for a := 0; a < wide; a++ {
		ok(t, vfs.Mkdir(c, target(t, root, fmt.Sprintf("/d%02d", a)), 0o755))
		for b := 0; b < wide; b++ {
			ok(t, vfs.Mkdir(c, target(t, root, fmt.Sprintf("/d%02d/s%02d", a, b)), 0o755))
		}
	}
	if grew := openFDs(t) - before; grew > maxAttached+maxTrimSteps {
		t.Fatalf("%d directories made: %d more descriptors held, want at most %d", wide*(wide+1), grew, maxAttached+maxTrimSteps)
	}
	d00 := nodeOf(t, root, "/d00")
	if d00.node != detached || nodeOf(t, root, "/d00/s00").node != detached {
		t.Fatal("the oldest idle directories still hold their nodes")
	}

	// Attributes stay; a name made in a directory whose own directory gave
	// its node back too walks to both again.
	var host unix.Stat_t
	ok(t, unix.Stat(filepath.Join(dir, "d00/s00"), &host))
	if st := stat(t, lookup(t, root, "/d00/s00")); st.Ino != host.Ino || st.Mode&unix.S_IFMT != unix.S_IFDIR {
		t.Errorf("stat of a directory walked to again: ino %d mode %o, want ino %d, a directory", st.Ino, st.Mode, host.Ino)
	}
	ok(t, vfs.Mkdir(c, target(t, root, "/d00/s01/new"), 0o755))
	if _, err := os.Stat(filepath.Join(dir, "d00/s01/new")); err != nil {
		t.Errorf("mkdir in a directory walked to again: %v", err)
	}
	// Renamed while given back, a directory is walked to by its new name.
	fill(t, root, 0, 2*maxAttached)
	if nodeOf(t, root, "/d01").node != detached {
		t.Fatal("d01 still holds its node")
	}
	ok(t, vfs.Rename(c, target(t, root, "/d01"), target(t, root, "/moved"), 0))
	fill(t, root, 1, 2*maxAttached)
	ok(t, vfs.Mkdir(c, target(t, root, "/moved/s00/x"), 0o755))
	if _, err := os.Stat(filepath.Join(dir, "moved/s00/x")); err != nil {
		t.Errorf("mkdir under a renamed directory walked to again: %v", err)
	}
	// Removed while given back.
	ok(t, vfs.Rmdir(c, target(t, root, "/d02/s00")))
	if _, err := os.Stat(filepath.Join(dir, "d02/s00")); !os.IsNotExist(err) {
		t.Errorf("host directory after rmdir: %v", err)
	}
	// The host renamed it behind the sandbox: stale.
	d03 := nodeOf(t, root, "/d03")
	if d03.node != detached {
		t.Fatal("d03 still holds its node")
	}
	ok(t, os.Rename(filepath.Join(dir, "d03"), filepath.Join(dir, "elsewhere")))
	if _, err := d03.Mkdir("y", 0o755, uint32(os.Getuid()), uint32(os.Getgid())); err != unix.ESTALE {
		t.Errorf("mkdir in a directory the host renamed: %v, want ESTALE", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "elsewhere/y")); !os.IsNotExist(err) {
		t.Errorf("the host's renamed directory was changed: %v", err)
	}
}

// TestDirectoriesInUseKeepTheirNodes: an open directory, and one a file in
// which holds a node (the gofer keeps the directory open for it), keep
// their nodes however many others are made; once closed, they give them
// back too.
func TestDirectoriesInUseKeepTheirNodes(t *testing.T) {
	dir := t.TempDir()
	root := served(t, dir)
	const maxAttached = 50
	root.Dentry.Inode().(*inode).fs.maxAttached = maxAttached
	c := me()
	ok(t, vfs.Mkdir(c, target(t, root, "/open"), 0o755))
	ok(t, vfs.Mkdir(c, target(t, root, "/parent"), 0o755))
	p, err := vfs.Create(c, target(t, root, "/parent/file"), 0o644)
	ok(t, err)
	file, err := p.Dentry.Inode().Open(unix.O_WRONLY)
	ok(t, err)
	open := nodeOf(t, root, "/open")
	d, err := open.Open(unix.O_RDONLY)
	ok(t, err)
	fill(t, root, 0, 4*maxAttached)
	parent := nodeOf(t, root, "/parent")
	if open.node == detached || parent.node == detached {
		t.Fatalf("in use, given back: open directory %v, directory of an open file %v", open.node == detached, parent.node == detached)
	}
	d.Release()
	file.Release()
	fill(t, root, 1, 4*maxAttached)
	fill(t, root, 2, 4*maxAttached)
	if open.node != detached || parent.node != detached {
		t.Errorf("closed, kept: directory %v, directory of the file %v", open.node != detached, parent.node != detached)
	}
	if k := parent.kids.Load(); k != 0 {
		t.Errorf("the directory counts %d files holding nodes in it, want 0", k)
	}
}

// TestRemovedDirectoryAfterItsNodeGoes: a directory removed while someone
// holds it (a working directory) keeps the attributes it had at its
// removal once its node is given back, and refuses new names (ENOENT, as
// Linux says).
func TestRemovedDirectoryAfterItsNodeGoes(t *testing.T) {
	dir := t.TempDir()
	root := served(t, dir)
	const maxAttached = 50
	root.Dentry.Inode().(*inode).fs.maxAttached = maxAttached
	c := me()
	ok(t, vfs.Mkdir(c, target(t, root, "/cwd"), 0o755))
	cwd := lookup(t, root, "/cwd")
	before := stat(t, cwd)
	ok(t, vfs.Rmdir(c, target(t, root, "/cwd")))
	fill(t, root, 0, 2*maxAttached)
	if cwd.Dentry.Inode().(*inode).node != detached {
		t.Fatal("the removed directory still holds its node")
	}
	st := stat(t, cwd)
	if st.Nlink != 0 || st.Ino != before.Ino {
		t.Errorf("stat of the removed directory: nlink %d ino %d, want 0 and %d", st.Nlink, st.Ino, before.Ino)
	}
	_, err := cwd.Dentry.Inode().(*inode).Mkdir("x", 0o755, uint32(os.Getuid()), uint32(os.Getgid()))
	if err != unix.ENOENT {
		t.Errorf("mkdir in the removed directory: %v, want ENOENT", err)
	}
}

// TestDeepChainIsBounded: a chain of directories far deeper than the
// bound, each made in the last, holds no more nodes than the bound; the
// way back up finds each again.
func TestDeepChainIsBounded(t *testing.T) {
	dir := t.TempDir()
	root := served(t, dir)
	const maxAttached = 100
	root.Dentry.Inode().(*inode).fs.maxAttached = maxAttached
	c := me()
	before := openFDs(t)
	const depth = 1000
	p := root
	for k := 0; k < depth; k++ {
		tg, err := vfs.Resolver{Root: root, Start: p}.LookupTarget("c")
		ok(t, err)
		ok(t, vfs.Mkdir(c, tg, 0o755))
		p, err = vfs.Resolver{Root: root, Start: p}.Lookup("c", false)
		ok(t, err)
	}
	if grew := openFDs(t) - before; grew > maxAttached+maxTrimSteps {
		t.Fatalf("a chain of %d directories: %d more descriptors held, want at most %d", depth, grew, maxAttached+maxTrimSteps)
	}
	// The deepest, made in directories given back, is on the host where
	// the chain says; it is emptied from the bottom up.
	ok(t, vfs.Mkdir(c, mustTarget(t, root, p, "leaf"), 0o755))
	if _, err := os.Stat(filepath.Join(dir, strings.Repeat("c/", depth), "leaf")); err != nil {
		t.Fatalf("the deepest directory's child: %v", err)
	}
	ok(t, vfs.Rmdir(c, mustTarget(t, root, p, "leaf")))
	for k := 0; k < depth; k++ {
		up, err := vfs.Resolver{Root: root, Start: p}.Lookup("..", false)
		ok(t, err)
		ok(t, vfs.Rmdir(c, mustTarget(t, root, up, "c")))
		p = up
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("the chain removed: %d entries left", len(ents))
	}
}

func mustTarget(t *testing.T, root, start vfs.Path, name string) vfs.Target {
	t.Helper()
	tg, err := vfs.Resolver{Root: root, Start: start}.LookupTarget(name)
	ok(t, err)
	return tg
}

// TestWalksCountAgainstTheBound: the nodes directories' walks hold for
// names not yet looked up count, and past the bound the older walk gives
// them back first; its names are found again afterwards.
func TestWalksCountAgainstTheBound(t *testing.T) {
	dir := t.TempDir()
	const entries = 80
	for _, d := range []string{"a", "b"} {
		ok(t, os.Mkdir(filepath.Join(dir, d), 0o755))
		for k := 0; k < entries; k++ {
			ok(t, os.WriteFile(filepath.Join(dir, d, fmt.Sprintf("f%03d", k)), nil, 0o644))
		}
	}
	root := served(t, dir)
	const maxAttached = 100
	f := root.Dentry.Inode().(*inode).fs
	f.maxAttached = maxAttached
	before := openFDs(t)
	for _, name := range []string{"/a/missing1", "/a/missing2", "/b/missing1", "/b/missing2"} {
		// The second miss in a directory walks it.
		if _, err := (vfs.Resolver{Root: root, Start: root}).Lookup(name, false); err != unix.ENOENT {
			t.Fatalf("lookup %s: %v, want ENOENT", name, err)
		}
	}
	if held := f.walkHeld.Load(); held < 2*entries {
		t.Fatalf("the walks hold %d nodes, want at least %d", held, 2*entries)
	}
	fill(t, root, 0, maxAttached)
	if grew := openFDs(t) - before; grew > maxAttached+maxTrimSteps {
		t.Errorf("past the bound with walks held: %d more descriptors, want at most %d", grew, maxAttached+maxTrimSteps)
	}
	a := nodeOf(t, root, "/a")
	a.pfMu.Lock()
	left := len(a.pf.entries)
	a.pfMu.Unlock()
	if left != 0 {
		t.Errorf("the older walk still holds %d nodes", left)
	}
	if st := stat(t, lookup(t, root, "/a/f042")); st.Mode&unix.S_IFMT != unix.S_IFREG {
		t.Errorf("a name of the walk given back: mode %o", st.Mode)
	}
}
