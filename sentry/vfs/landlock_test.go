package vfs_test

import (
	"testing"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/sentry/fs/tmpfs"
	"github.com/moat-sandbox/moat/sentry/vfs"
)

const (
	llRead  = unix.LANDLOCK_ACCESS_FS_READ_FILE
	llWrite = unix.LANDLOCK_ACCESS_FS_WRITE_FILE
	llNames = unix.LANDLOCK_ACCESS_FS_MAKE_REG | unix.LANDLOCK_ACCESS_FS_REMOVE_FILE |
		unix.LANDLOCK_ACCESS_FS_MAKE_DIR | unix.LANDLOCK_ACCESS_FS_REMOVE_DIR
)

// restrictedBy returns root's credentials in a domain of one layer that
// handles handled and allows each path's rights.
func (tr *tree) restrictedBy(handled uint64, rules map[string]uint64) *vfs.Creds {
	tr.t.Helper()
	rs := vfs.NewLandlockRuleset(vfs.LandlockHandled{FS: handled})
	for name, access := range rules {
		tr.ok(rs.AddRule(tr.path(name), access))
	}
	d, err := (*vfs.LandlockDomain)(nil).Restrict(rs)
	tr.ok(err)
	c := *root
	c.Landlock = d
	return &c
}

func TestLandlockRulesAreOnFilesNotNames(t *testing.T) {
	tr := newTree(t)
	tr.ok(vfs.Mkdir(root, tr.target("/tmp/a"), 0o755))
	tr.create(root, "/tmp/a/f", 0o644)
	c := tr.restrictedBy(llRead, map[string]uint64{"/tmp/a": llRead})
	if err := c.Landlock.Check(tr.path("/tmp/a/f"), llRead); err != nil {
		t.Fatalf("reading beneath the rule: %v", err)
	}
	// Renamed by someone free, the directory keeps its rule; a new
	// directory of the old name has none.
	tr.ok(vfs.Rename(root, tr.target("/tmp/a"), tr.target("/tmp/b"), 0))
	tr.ok(vfs.Mkdir(root, tr.target("/tmp/a"), 0o755))
	tr.create(root, "/tmp/a/g", 0o644)
	if err := c.Landlock.Check(tr.path("/tmp/b/f"), llRead); err != nil {
		t.Errorf("reading the renamed directory's file: %v", err)
	}
	if err := c.Landlock.Check(tr.path("/tmp/a/g"), llRead); err != unix.EACCES {
		t.Errorf("reading a file of the new /tmp/a: %v, want EACCES", err)
	}
}

func TestLandlockABindMountDoesNotEscapeItsRules(t *testing.T) {
	tr := newTree(t)
	for _, d := range []string{"/tmp/secret", "/tmp/open", "/tmp/open/view"} {
		tr.ok(vfs.Mkdir(root, tr.target(d), 0o755))
	}
	tr.create(root, "/tmp/secret/key", 0o600)
	c := tr.restrictedBy(llRead, map[string]uint64{"/tmp/open": llRead})
	// A bind of the denied tree under the allowed one: the walk goes up
	// from the bind's root to where it is mounted, so the file is
	// allowed there (as on Linux: whoever can mount can do that), and
	// still denied by its own name.
	if _, err := vfs.BindMount(tr.path("/tmp/secret"), tr.path("/tmp/open/view"), 0); err != nil {
		t.Fatal(err)
	}
	if err := c.Landlock.Check(tr.path("/tmp/open/view/key"), llRead); err != nil {
		t.Errorf("through a bind under the allowed tree: %v", err)
	}
	if err := c.Landlock.Check(tr.path("/tmp/secret/key"), llRead); err != unix.EACCES {
		t.Errorf("by its own name: %v, want EACCES", err)
	}
	// The other way round: an allowed tree bound elsewhere is reached
	// through the mount, whose root is the allowed directory itself.
	tr.ok(vfs.Mkdir(root, tr.target("/tmp/elsewhere"), 0o755))
	if _, err := vfs.BindMount(tr.path("/tmp/open"), tr.path("/tmp/elsewhere"), 0); err != nil {
		t.Fatal(err)
	}
	tr.create(root, "/tmp/open/f", 0o644)
	if err := c.Landlock.Check(tr.path("/tmp/elsewhere/f"), llRead); err != nil {
		t.Errorf("the allowed tree through its bind: %v", err)
	}
}

func TestLandlockRulesOnAHiddenMountPointDoNotApply(t *testing.T) {
	tr := newTree(t)
	tr.ok(vfs.Mkdir(root, tr.target("/tmp/mp"), 0o755))
	// The rule is on the directory a file system is then mounted on:
	// the walk up from the mount's files skips it, as Linux's does.
	c := tr.restrictedBy(llRead, map[string]uint64{"/tmp/mp": llRead})
	if _, err := vfs.Attach(tr.path("/tmp/mp"), tmpfs.New(testMem(t), tmpfs.DefaultOptions()), "tmpfs", 0); err != nil {
		t.Fatal(err)
	}
	tr.create(root, "/tmp/mp/f", 0o644)
	if err := c.Landlock.Check(tr.path("/tmp/mp/f"), llRead); err != unix.EACCES {
		t.Errorf("under the hidden mount point: %v, want EACCES", err)
	}
	onRoot := tr.restrictedBy(llRead, map[string]uint64{"/tmp/mp": llRead}) // now the mount's root
	if err := onRoot.Landlock.Check(tr.path("/tmp/mp/f"), llRead); err != nil {
		t.Errorf("rule on the mount's root: %v", err)
	}
}

func TestLandlockDirectoryMovedOutOfABindMount(t *testing.T) {
	tr := newTree(t)
	for _, d := range []string{"/tmp/top", "/tmp/top/in", "/tmp/top/in/d", "/tmp/out", "/tmp/view"} {
		tr.ok(vfs.Mkdir(root, tr.target(d), 0o755))
	}
	tr.create(root, "/tmp/top/in/d/f", 0o644)
	if _, err := vfs.BindMount(tr.path("/tmp/top/in"), tr.path("/tmp/view"), 0); err != nil {
		t.Fatal(err)
	}
	d := tr.path("/tmp/view/d")
	// Moved out of the bind's tree, d is reached through the bind all
	// the same (a working directory, an open fd): its rights are those
	// of its own tree and of where the bind is mounted (erratum 3).
	tr.ok(vfs.Rename(root, tr.target("/tmp/top/in/d"), tr.target("/tmp/out/d"), 0))
	f, err := vfs.Resolver{Root: tr.root, Start: d, Creds: *root}.Lookup("f", false)
	tr.ok(err)
	for _, tc := range []struct {
		rule string
		want error
	}{
		{"/tmp/out", nil},  // its file system's tree now
		{"/tmp/view", nil}, // the bind's root
		{"/tmp/top", unix.EACCES},
	} {
		c := tr.restrictedBy(llRead, map[string]uint64{tc.rule: llRead})
		if err := c.Landlock.Check(f, llRead); err != tc.want {
			t.Errorf("rule on %s: %v, want %v", tc.rule, err, tc.want)
		}
	}
}

func TestLandlockLayersMustAllAllow(t *testing.T) {
	tr := newTree(t)
	tr.ok(vfs.Mkdir(root, tr.target("/tmp/a"), 0o755))
	tr.create(root, "/tmp/a/f", 0o644)
	var d *vfs.LandlockDomain
	for i, rules := range []map[string]uint64{{"/tmp": llRead | llWrite}, {"/tmp/a": llWrite}} {
		rs := vfs.NewLandlockRuleset(vfs.LandlockHandled{FS: llRead | llWrite})
		for name, access := range rules {
			tr.ok(rs.AddRule(tr.path(name), access))
		}
		var err error
		if d, err = d.Restrict(rs); err != nil {
			t.Fatalf("layer %d: %v", i, err)
		}
	}
	f := tr.path("/tmp/a/f")
	if err := d.Check(f, llWrite); err != nil {
		t.Errorf("write, allowed by both layers: %v", err)
	}
	if err := d.Check(f, llRead); err != unix.EACCES {
		t.Errorf("read, allowed by the first layer only: %v, want EACCES", err)
	}
	for d.Layers() < vfs.LandlockMaxLayers {
		var err error
		if d, err = d.Restrict(vfs.NewLandlockRuleset(vfs.LandlockHandled{FS: llRead})); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := d.Restrict(vfs.NewLandlockRuleset(vfs.LandlockHandled{FS: llRead})); err != unix.E2BIG {
		t.Errorf("layer %d: %v, want E2BIG", vfs.LandlockMaxLayers+1, err)
	}
}

func TestLandlockRenameNeedsReferAndNoGain(t *testing.T) {
	tr := newTree(t)
	for _, d := range []string{"/tmp/r", "/tmp/w"} {
		tr.ok(vfs.Mkdir(root, tr.target(d), 0o755))
	}
	tr.create(root, "/tmp/r/f", 0o644)
	tr.create(root, "/tmp/w/g", 0o644)
	refer := uint64(unix.LANDLOCK_ACCESS_FS_REFER)
	c := tr.restrictedBy(llRead|llWrite|llNames|refer, map[string]uint64{
		"/tmp/r": llRead | llNames | refer, "/tmp/w": llRead | llWrite | llNames | refer,
	})
	if err := vfs.Rename(c, tr.target("/tmp/r/f"), tr.target("/tmp/w/f"), 0); err != unix.EXDEV {
		t.Errorf("a move that gains WRITE_FILE: %v, want EXDEV", err)
	}
	if err := vfs.Rename(c, tr.target("/tmp/w/g"), tr.target("/tmp/r/g"), 0); err != nil {
		t.Errorf("a move that loses WRITE_FILE: %v", err)
	}
	// A file's own rule moves with it and counts on both sides.
	tr.create(root, "/tmp/r/own", 0o644)
	c = tr.restrictedBy(llRead|llWrite|llNames|refer, map[string]uint64{
		"/tmp/r": llRead | llNames | refer, "/tmp/w": llRead | llWrite | llNames | refer,
		"/tmp/r/own": llWrite,
	})
	if err := vfs.Rename(c, tr.target("/tmp/r/own"), tr.target("/tmp/w/own"), 0); err != nil {
		t.Errorf("a move the file's own rule already allows: %v", err)
	}
}

func TestLandlockScopesReachOnlyTheDomainAndBelow(t *testing.T) {
	scoped := vfs.NewLandlockRuleset(vfs.LandlockHandled{Scoped: unix.LANDLOCK_SCOPE_SIGNAL})
	fsOnly := vfs.NewLandlockRuleset(vfs.LandlockHandled{FS: llRead})
	a, err := (*vfs.LandlockDomain)(nil).Restrict(scoped)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := a.Restrict(fsOnly) // made on a
	c, _ := a.Restrict(scoped) // made on a, a sibling of b
	free, _ := (*vfs.LandlockDomain)(nil).Restrict(fsOnly)
	const sig = unix.LANDLOCK_SCOPE_SIGNAL
	for _, tc := range []struct {
		name           string
		client, server *vfs.LandlockDomain
		want           bool
	}{
		{"no domain", nil, a, false},
		{"to no domain", a, nil, true},
		{"the same domain", a, a, false},
		{"to one made on it", a, b, false},
		{"from one made on it, not scoping", b, a, false},
		{"from one made on it, scoping", c, a, true},
		{"between siblings", c, b, true},
		{"a domain that does not scope", free, nil, false},
	} {
		if got := tc.client.Scopes(tc.server, sig); got != tc.want {
			t.Errorf("%s: Scopes = %v, want %v", tc.name, got, tc.want)
		}
	}
	if a.Scopes(nil, unix.LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET) {
		t.Error("a signal scope keeps abstract sockets too")
	}
}

// A host file system may give a removed file's device and inode numbers
// to a new file: a rule whose name was removed names its file through
// that dentry alone. A hard link, the same numbers under another
// dentry, shows it.
func TestLandlockRuleOnARemovedNameDoesNotPassToTheSameNumbers(t *testing.T) {
	tr := newTree(t)
	tr.create(root, "/tmp/f", 0o644)
	f := tr.path("/tmp/f")
	c := tr.restrictedBy(llRead, map[string]uint64{"/tmp/f": llRead})
	tr.ok(vfs.Link(root, f, tr.target("/tmp/g")))
	if err := c.Landlock.Check(tr.path("/tmp/g"), llRead); err != nil {
		t.Errorf("a hard link of the ruled file, its name still there: %v", err)
	}
	tr.ok(vfs.Unlink(root, tr.target("/tmp/f")))
	if err := c.Landlock.Check(f, llRead); err != nil {
		t.Errorf("the ruled file through its removed name: %v", err)
	}
	if err := c.Landlock.Check(tr.path("/tmp/g"), llRead); err != unix.EACCES {
		t.Errorf("the same numbers under another name once the ruled one is gone: %v, want EACCES", err)
	}
}
