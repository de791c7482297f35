package vfs_test

import (
	"testing"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/sentry/vfs"
)

// TestReadingARemovedDirectoryFailsWithENOENT: getdents64 on an open
// directory that rmdir removed fails with ENOENT, as Linux's iterate_dir
// (IS_DEADDIR), even from an offset where it had already listed some.
func TestReadingARemovedDirectoryFailsWithENOENT(t *testing.T) {
	tr := newTree(t)
	tr.ok(vfs.Mkdir(root, tr.target("/tmp/d"), 0o755))
	f := tr.open("/tmp/d", unix.O_RDONLY|unix.O_DIRECTORY)
	n := 0
	tr.ok(f.IterDirents(tr.root, func(vfs.Dirent, int64) bool { n++; return n < 2 }))
	tr.ok(vfs.Rmdir(root, tr.target("/tmp/d")))
	for _, what := range []string{"after '.'", "again"} {
		err := f.IterDirents(tr.root, func(vfs.Dirent, int64) bool { return true })
		if err != unix.ENOENT {
			t.Errorf("%s: IterDirents of a removed directory: %v, want ENOENT", what, err)
		}
	}
}
