package vfs_test

import (
	"fmt"
	"strings"
	"sync"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/sentry/vfs"
)

// recorder is an inotify instance that records what its watches see.
type recorder struct {
	mu     sync.Mutex
	events []vfs.WatchEvent
}

func (r *recorder) Queue(ev vfs.WatchEvent) {
	r.mu.Lock()
	r.events = append(r.events, ev)
	r.mu.Unlock()
}

var eventNames = []struct {
	bit  uint32
	name string
}{
	{unix.IN_ACCESS, "ACCESS"}, {unix.IN_MODIFY, "MODIFY"}, {unix.IN_ATTRIB, "ATTRIB"},
	{unix.IN_CLOSE_WRITE, "CLOSE_WRITE"}, {unix.IN_CLOSE_NOWRITE, "CLOSE_NOWRITE"}, {unix.IN_OPEN, "OPEN"},
	{unix.IN_MOVED_FROM, "MOVED_FROM"}, {unix.IN_MOVED_TO, "MOVED_TO"}, {unix.IN_CREATE, "CREATE"},
	{unix.IN_DELETE, "DELETE"}, {unix.IN_DELETE_SELF, "DELETE_SELF"}, {unix.IN_MOVE_SELF, "MOVE_SELF"},
	{unix.IN_IGNORED, "IGNORED"}, {unix.IN_ISDIR, "ISDIR"},
}

// take returns the events seen since the last take, one per line as
// "wd MASK|MASK name", and whether the cookies of MOVED_FROM/MOVED_TO
// pairs match.
func (r *recorder) take() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var lines []string
	var cookie uint32
	for _, ev := range r.events {
		var names []string
		for _, n := range eventNames {
			if ev.Mask&n.bit != 0 {
				names = append(names, n.name)
			}
		}
		line := fmt.Sprintf("%d %s", ev.WD, strings.Join(names, "|"))
		if ev.Name != "" {
			line += " " + ev.Name
		}
		switch {
		case ev.Mask&unix.IN_MOVED_FROM != 0:
			cookie = ev.Cookie
			if cookie == 0 {
				line += " (no cookie)"
			}
		case ev.Mask&unix.IN_MOVED_TO != 0:
			if ev.Cookie != cookie {
				line += " (another cookie)"
			}
		case ev.Cookie != 0:
			line += " (a cookie)"
		}
		lines = append(lines, line)
	}
	r.events = nil
	return strings.Join(lines, "\n")
}

func (tr *tree) watch(r *recorder, name string, mask uint32) int32 {
	tr.t.Helper()
	id, err := vfs.WatchID(tr.path(name))
	tr.ok(err)
	wd, err := vfs.AddWatch(r, id, mask)
	tr.ok(err)
	return wd
}

func (tr *tree) open(name string, flags int) *vfs.File {
	tr.t.Helper()
	p := tr.path(name)
	impl, err := p.Dentry.Inode().Open(flags)
	tr.ok(err)
	return vfs.NewFile(impl, p, flags)
}

func expectEvents(t *testing.T, r *recorder, what, want string) {
	t.Helper()
	want = strings.TrimSpace(strings.ReplaceAll(want, "\t", ""))
	if got := r.take(); got != want {
		t.Errorf("%s: events\n%s\nwant\n%s", what, got, want)
	}
}

func TestAnEventAboutAFileGoesToItsDirectoryWithItsNameThenToItsOwnWatch(t *testing.T) {
	tr := newTree(t)
	r := &recorder{}
	defer vfs.RemoveOwner(r)
	tr.watch(r, "/tmp", unix.IN_ALL_EVENTS)
	tr.create(root, "/tmp/f", 0o644)
	expectEvents(t, r, "create", "1 CREATE f")
	tr.watch(r, "/tmp/f", unix.IN_ALL_EVENTS)
	f := tr.open("/tmp/f", unix.O_RDWR)
	f.Write(vfs.NewIOSeqBuffer([]byte("abc")))
	f.Pread(vfs.NewIOSeqBuffer(make([]byte, 3)), 0)
	f.Write(vfs.NewIOSeqBuffer(nil)) // nothing written: no event
	f.DecRef()
	expectEvents(t, r, "open, write, read, close", `
		1 OPEN f
		2 OPEN
		1 MODIFY f
		2 MODIFY
		1 ACCESS f
		2 ACCESS
		1 CLOSE_WRITE f
		2 CLOSE_WRITE`)
	tr.ok(vfs.Mkdir(root, tr.target("/tmp/d"), 0o755))
	tr.ok(vfs.Chmod(root, tr.path("/tmp/d"), 0o700))
	expectEvents(t, r, "mkdir, chmod", "1 CREATE|ISDIR d\n1 ATTRIB|ISDIR d")
}

func TestChangesOfAttributesAreTheEventsLinuxsFsnotifyChangeSends(t *testing.T) {
	tr := newTree(t)
	r := &recorder{}
	defer vfs.RemoveOwner(r)
	tr.create(root, "/tmp/f", 0o644)
	tr.watch(r, "/tmp/f", unix.IN_ALL_EVENTS)
	tr.ok(vfs.Truncate(root, tr.path("/tmp/f"), 10))
	tr.ok(vfs.Chown(root, tr.path("/tmp/f"), 5, -1))
	at := [2]unix.Timespec{{Sec: 1}, {Nsec: unix.UTIME_OMIT}}
	tr.ok(vfs.Utimes(root, tr.path("/tmp/f"), &at))
	mt := [2]unix.Timespec{{Nsec: unix.UTIME_OMIT}, {Sec: 2}}
	tr.ok(vfs.Utimes(root, tr.path("/tmp/f"), &mt))
	tr.ok(vfs.Utimes(root, tr.path("/tmp/f"), nil))
	expectEvents(t, r, "truncate, chown, atime, mtime, both times", `
		1 MODIFY
		1 ATTRIB
		1 ACCESS
		1 MODIFY
		1 ATTRIB`)
}

func TestRenameReportsBothNamesWithOneCookieAndTheReplacedFileLast(t *testing.T) {
	tr := newTree(t)
	r := &recorder{}
	defer vfs.RemoveOwner(r)
	tr.ok(vfs.Mkdir(root, tr.target("/tmp/a"), 0o755))
	tr.ok(vfs.Mkdir(root, tr.target("/tmp/b"), 0o755))
	tr.create(root, "/tmp/a/x", 0o644)
	tr.create(root, "/tmp/b/y", 0o644)
	tr.watch(r, "/tmp/a", unix.IN_ALL_EVENTS)
	tr.watch(r, "/tmp/b", unix.IN_ALL_EVENTS)
	tr.watch(r, "/tmp/a/x", unix.IN_ALL_EVENTS)
	tr.watch(r, "/tmp/b/y", unix.IN_ALL_EVENTS)
	tr.ok(vfs.Rename(root, tr.target("/tmp/a/x"), tr.target("/tmp/b/y"), 0))
	expectEvents(t, r, "rename over y", `
		1 MOVED_FROM x
		2 MOVED_TO y
		4 ATTRIB
		3 MOVE_SELF
		4 DELETE_SELF
		4 IGNORED`)
	tr.create(root, "/tmp/a/z", 0o644)
	r.take()
	tr.ok(vfs.Rename(root, tr.target("/tmp/a/z"), tr.target("/tmp/b/y"), unix.RENAME_EXCHANGE))
	expectEvents(t, r, "exchange", `
		1 MOVED_FROM z
		2 MOVED_TO y
		2 MOVED_FROM y
		1 MOVED_TO z
		3 MOVE_SELF`)
}

func TestTheLastNameOfAClosedFileGoesWithDeleteSelfBeforeTheDirectorysDelete(t *testing.T) {
	tr := newTree(t)
	r := &recorder{}
	defer vfs.RemoveOwner(r)
	tr.create(root, "/tmp/f", 0o644)
	tr.ok(vfs.Link(root, tr.path("/tmp/f"), tr.target("/tmp/g")))
	tr.watch(r, "/tmp", unix.IN_ALL_EVENTS)
	tr.watch(r, "/tmp/f", unix.IN_ALL_EVENTS)
	tr.ok(vfs.Unlink(root, tr.target("/tmp/g")))
	expectEvents(t, r, "unlink of one of two names", "2 ATTRIB\n1 DELETE g")
	tr.ok(vfs.Unlink(root, tr.target("/tmp/f")))
	expectEvents(t, r, "unlink of the last name", `
		2 ATTRIB
		2 DELETE_SELF
		2 IGNORED
		1 DELETE f`)
	tr.ok(vfs.Mkdir(root, tr.target("/tmp/d"), 0o755))
	tr.watch(r, "/tmp/d", unix.IN_ALL_EVENTS)
	r.take()
	tr.ok(vfs.Rmdir(root, tr.target("/tmp/d")))
	expectEvents(t, r, "rmdir", "3 DELETE_SELF\n3 IGNORED\n1 DELETE|ISDIR d")
}

func TestDeleteSelfOfAnOpenFileWaitsForItsLastClose(t *testing.T) {
	tr := newTree(t)
	r := &recorder{}
	defer vfs.RemoveOwner(r)
	tr.create(root, "/tmp/f", 0o644)
	f := tr.open("/tmp/f", unix.O_RDONLY)
	tr.watch(r, "/tmp", unix.IN_ALL_EVENTS)
	tr.watch(r, "/tmp/f", unix.IN_ALL_EVENTS|unix.IN_EXCL_UNLINK)
	tr.ok(vfs.Unlink(root, tr.target("/tmp/f")))
	expectEvents(t, r, "unlink of an open file", "2 ATTRIB\n1 DELETE f")
	f.Pread(vfs.NewIOSeqBuffer(make([]byte, 1)), 0) // empty: no event
	f.DecRef()
	// The file's watch has IN_EXCL_UNLINK: it ignores its close.
	expectEvents(t, r, "its last close", `
		1 CLOSE_NOWRITE f
		2 DELETE_SELF
		2 IGNORED`)
}

func TestWatchMasksFollowMaskAddMaskCreateAndOneshot(t *testing.T) {
	tr := newTree(t)
	r := &recorder{}
	defer vfs.RemoveOwner(r)
	tr.create(root, "/tmp/f", 0o644)
	tr.ok(vfs.Link(root, tr.path("/tmp/f"), tr.target("/tmp/g")))
	wd := tr.watch(r, "/tmp/f", unix.IN_ATTRIB)
	id, _ := vfs.WatchID(tr.path("/tmp/g"))
	if _, err := vfs.AddWatch(r, id, unix.IN_MODIFY|unix.IN_MASK_CREATE); err != unix.EEXIST {
		t.Errorf("IN_MASK_CREATE on another name of a watched file: %v, want EEXIST", err)
	}
	if got, _ := vfs.AddWatch(r, id, unix.IN_MODIFY|unix.IN_MASK_ADD); got != wd {
		t.Errorf("IN_MASK_ADD gave watch %d, want the same watch %d", got, wd)
	}
	f := tr.open("/tmp/g", unix.O_WRONLY)
	f.Write(vfs.NewIOSeqBuffer([]byte("x")))
	tr.ok(vfs.Chmod(root, tr.path("/tmp/g"), 0o600))
	expectEvents(t, r, "IN_ATTRIB plus IN_MODIFY, through the other name", "1 MODIFY\n1 ATTRIB")
	vfs.AddWatch(r, id, unix.IN_MODIFY|unix.IN_ONESHOT) // replaces the mask
	tr.ok(vfs.Chmod(root, tr.path("/tmp/g"), 0o644))
	f.Write(vfs.NewIOSeqBuffer([]byte("x")))
	f.Write(vfs.NewIOSeqBuffer([]byte("x")))
	f.DecRef()
	expectEvents(t, r, "a oneshot IN_MODIFY watch", "1 MODIFY\n1 IGNORED")
	if err := vfs.RemoveWatch(r, wd); err != unix.EINVAL {
		t.Errorf("removing a oneshot watch that fired: %v, want EINVAL", err)
	}
	wd2 := tr.watch(r, "/tmp/f", unix.IN_MODIFY)
	if wd2 == wd {
		t.Errorf("a new watch reused wd %d", wd)
	}
	tr.ok(vfs.RemoveWatch(r, wd2))
	expectEvents(t, r, "inotify_rm_watch", fmt.Sprintf("%d IGNORED", wd2))
}

func TestAChangeOfExtendedAttributesIsIN_ATTRIB(t *testing.T) {
	tr := newTree(t)
	r := &recorder{}
	defer vfs.RemoveOwner(r)
	tr.create(root, "/tmp/f", 0o644)
	tr.watch(r, "/tmp", unix.IN_ATTRIB)
	target, err := vfs.XattrTargetOf(tr.path("/tmp/f"))
	tr.ok(err)
	tr.ok(vfs.SetXattr(root, target, "user.k", []byte("v"), 0))
	tr.ok(vfs.RemoveXattr(root, target, "user.k"))
	expectEvents(t, r, "setxattr, removexattr", "1 ATTRIB f\n1 ATTRIB f")
}
