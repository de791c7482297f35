package vfs_test

import (
	"testing"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/sentry/vfs"
)

// TestSearchPermission pins Linux's may_lookup: each directory a name is
// looked up in must grant the caller search (execute) permission, "." and
// ".." included, along a symlink's target too, and for the directory
// that holds the last component of a name being made or removed.
func TestSearchPermission(t *testing.T) {
	tr := newTree(t)
	tr.ok(vfs.Mkdir(root, tr.target("/priv"), 0o755))
	tr.create(root, "/priv/secret", 0o644)
	tr.ok(vfs.Mkdir(root, tr.target("/priv/sub"), 0o755))
	tr.ok(vfs.Chmod(root, tr.path("/priv"), 0o700))
	tr.ok(vfs.Symlink(root, tr.target("/link"), "priv/secret"))
	tr.ok(vfs.Mkdir(root, tr.target("/grp"), 0o710))
	tr.ok(vfs.Chown(root, tr.path("/grp"), 0, 50))
	tr.create(root, "/grp/f", 0o644)

	as := func(c *vfs.Creds) vfs.Resolver { return vfs.Resolver{Root: tr.root, Start: tr.root, Creds: *c} }
	readSearch := &vfs.Creds{FSUID: 1000, FSGID: 1000, Caps: 1 << unix.CAP_DAC_READ_SEARCH}
	override := &vfs.Creds{FSUID: 1000, FSGID: 1000, Caps: 1 << unix.CAP_DAC_OVERRIDE}
	for _, c := range []struct {
		name   string
		creds  *vfs.Creds
		follow bool
		want   error
	}{
		{"/priv", bob, true, nil},
		{"/priv/", bob, true, nil}, // nothing is looked up in it
		{"/priv/secret", bob, true, unix.EACCES},
		{"/priv/absent", bob, true, unix.EACCES}, // before ENOENT
		{"/priv/.", bob, true, unix.EACCES},
		{"/priv/..", bob, true, unix.EACCES},
		{"/priv/sub/x", bob, true, unix.EACCES},
		{"/link", bob, false, nil},
		{"/link", bob, true, unix.EACCES},
		{"/priv/secret", noCaps, true, nil}, // uid 0 owns it: the owner's bits
		{"/priv/secret", readSearch, true, nil},
		{"/priv/secret", override, true, nil},
		{"/grp/f", alice, true, nil}, // alice is in group 50
		{"/grp/f", bob, true, unix.EACCES},
	} {
		_, err := as(c.creds).Lookup(c.name, c.follow)
		if err != c.want {
			t.Errorf("Lookup(%q, follow %v) as uid %d caps %#x = %v, want %v", c.name, c.follow,
				c.creds.FSUID, c.creds.Caps, err, c.want)
		}
	}

	// A start directory is no pass: the names below it are looked up in it.
	start := vfs.Resolver{Root: tr.root, Start: tr.path("/priv"), Creds: *bob}
	if _, err := start.Lookup("secret", true); err != unix.EACCES {
		t.Errorf("Lookup(secret) from /priv as bob = %v, want EACCES", err)
	}
	// The directory a name is made in is searched for it.
	for _, name := range []string{"/priv/new", "/priv/secret", "/priv/sub/new"} {
		if _, err := as(bob).LookupTarget(name); err != unix.EACCES {
			t.Errorf("LookupTarget(%q) as bob = %v, want EACCES", name, err)
		}
		if _, _, err := as(bob).LookupCreate(name, true); err != unix.EACCES {
			t.Errorf("LookupCreate(%q) as bob = %v, want EACCES", name, err)
		}
	}
	if _, err := as(bob).LookupTarget("/priv"); err != nil {
		t.Errorf("LookupTarget(/priv) as bob = %v, want its target", err)
	}
}
