package vfs_test

import (
	"testing"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/sentry/vfs"
)

// TestPermission pins generic_permission's capability rules.
func TestPermission(t *testing.T) {
	file := &vfs.Stat{Mode: unix.S_IFREG | 0o600, UID: 1000, GID: 1000}
	script := &vfs.Stat{Mode: unix.S_IFREG | 0o700, UID: 1000, GID: 1000}
	dir := &vfs.Stat{Mode: unix.S_IFDIR | 0o700, UID: 1000, GID: 1000}
	readSearch := &vfs.Creds{Caps: 1 << unix.CAP_DAC_READ_SEARCH}
	override := &vfs.Creds{Caps: 1 << unix.CAP_DAC_OVERRIDE}
	for _, c := range []struct {
		what  string
		creds *vfs.Creds
		st    *vfs.Stat
		want  uint32
		err   error
	}{
		{"owner reads", alice, file, vfs.MayRead | vfs.MayWrite, nil},
		{"owner executes no x", alice, file, vfs.MayExec, unix.EACCES},
		{"other reads", bob, file, vfs.MayRead, unix.EACCES},
		{"no caps reads", noCaps, file, vfs.MayRead, unix.EACCES},
		{"read-search reads", readSearch, file, vfs.MayRead, nil},
		{"read-search writes", readSearch, file, vfs.MayWrite, unix.EACCES},
		{"read-search executes", readSearch, script, vfs.MayExec, unix.EACCES},
		{"read-search lists", readSearch, dir, vfs.MayRead | vfs.MayExec, nil},
		{"read-search writes a dir", readSearch, dir, vfs.MayWrite | vfs.MayExec, unix.EACCES},
		{"override writes", override, file, vfs.MayRead | vfs.MayWrite, nil},
		{"override executes no x", override, file, vfs.MayExec, unix.EACCES},
		{"override executes", override, script, vfs.MayExec, nil},
		{"override writes a dir", override, dir, vfs.MayWrite | vfs.MayExec, nil},
	} {
		if err := c.creds.Permission(c.st, c.want); err != c.err {
			t.Errorf("%s: Permission = %v, want %v", c.what, err, c.err)
		}
	}
}
