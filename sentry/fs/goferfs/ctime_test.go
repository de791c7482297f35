package goferfs

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/sentry/vfs"
)

// TestTheChangeTimeMovesAsTheHostsDoes: a rename and a chown to -1, -1
// change nothing a stat shows but the change time, which the cached
// attributes must not hide (Linux's rename and chown_common both touch it).
func TestTheChangeTimeMovesAsTheHostsDoes(t *testing.T) {
	dir := t.TempDir()
	ok(t, os.WriteFile(filepath.Join(dir, "f"), []byte("f"), 0o644))
	root := served(t, dir)
	c := me()
	ctime := func(name string) int64 {
		t.Helper()
		st := stat(t, lookup(t, root, name))
		return st.Ctime.Nano()
	}
	for _, step := range []struct {
		what, from, to string // the file's name before and after
		do             func() error
	}{
		{"chown(-1, -1)", "/f", "/f", func() error { return vfs.Chown(c, lookup(t, root, "/f"), -1, -1) }},
		{"rename", "/f", "/g", func() error { return vfs.Rename(c, target(t, root, "/f"), target(t, root, "/g"), 0) }},
	} {
		before := ctime(step.from)
		time.Sleep(20 * time.Millisecond) // past the host's clock tick
		ok(t, step.do())
		var host unix.Stat_t
		ok(t, unix.Stat(filepath.Join(dir, step.to), &host))
		if got := ctime(step.to); got <= before || got != host.Ctim.Nano() {
			t.Errorf("after %s: ctime %d, before %d, the host's %d", step.what, got, before, host.Ctim.Nano())
		}
	}
}

// TestAReadMovesTheAccessTimeAsTheHostsDoes: under relatime a read of a
// file whose access time is older than its modification moves it on the
// host, and stat shows it, not the cached time.
func TestAReadMovesTheAccessTimeAsTheHostsDoes(t *testing.T) {
	dir := t.TempDir()
	name := filepath.Join(dir, "f")
	ok(t, os.WriteFile(name, []byte("f"), 0o644))
	ok(t, os.Chtimes(name, time.Unix(100, 0), time.Now()))
	root := served(t, dir)
	p := lookup(t, root, "/f")
	if at := stat(t, p).Atime; at.Sec != 100 {
		t.Fatalf("atime before the read: %v", at)
	}
	impl, err := p.Dentry.Inode().Open(unix.O_RDONLY)
	ok(t, err)
	f := vfs.NewFile(impl, p, unix.O_RDONLY)
	defer f.DecRef()
	if n, err := f.Read(vfs.NewIOSeqBuffer(make([]byte, 1))); n != 1 || err != nil {
		t.Fatalf("read: %d, %v", n, err)
	}
	var host unix.Stat_t
	ok(t, unix.Stat(name, &host))
	if host.Atim.Sec == 100 {
		t.Skip("the host file system does not move access times (noatime)")
	}
	if got := stat(t, p).Atime; got.Nano() != host.Atim.Nano() {
		t.Errorf("atime after the read: %v, the host's %v", got, host.Atim)
	}
}
