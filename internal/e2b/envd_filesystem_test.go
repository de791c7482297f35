package e2b

import (
	"context"
	"reflect"
	"syscall"
	"testing"
	"time"

	"github.com/moat-sandbox/moat/internal/control"
)

var (
	rootUser  = guestUser{name: "root", home: "/root"}
	plainUser = guestUser{name: "user", uid: 1000, gid: 1000, home: "/home/user"}
)

func TestSentryEntriesBecomeEnvdsEntryInfo(t *testing.T) {
	names := idNames{users: map[uint32]string{0: "root"}, groups: map[uint32]string{50: "staff"}}
	d := entryOf(control.FileEntry{Path: "/tmp/dir", Mode: syscall.S_IFDIR | 0o755, Size: 4096, GID: 50,
		Mtime: 1_700_000_000_500_000_000}, names)
	if d.Type != fileTypeDirectory || d.Name != "dir" || d.Path != "/tmp/dir" || d.Size != "4096" ||
		d.Mode != 0o755 || d.Permissions != "drwxr-xr-x" || d.Owner != "root" || d.Group != "staff" ||
		d.SymlinkTarget != nil || d.ModifiedTime == nil || !d.ModifiedTime.Equal(time.Unix(1700000000, 5e8)) {
		t.Errorf("directory: %+v", d)
	}
	l := entryOf(control.FileEntry{Path: "/a/link", Mode: syscall.S_IFLNK | 0o777, Size: 9, UID: 1000, GID: 1000,
		Target: "../target"}, names)
	if l.Type != fileTypeSymlink || l.SymlinkTarget == nil || *l.SymlinkTarget != "../target" ||
		l.Permissions != "Lrwxrwxrwx" || l.Owner != "1000" || l.Group != "1000" {
		t.Errorf("symlink (ids no file names): %+v", l)
	}
	f := entryOf(control.FileEntry{Path: "/x", Mode: syscall.S_IFREG | 0o4644, Size: 14}, names)
	if f.Type != fileTypeFile || f.Mode != 0o644 || f.Permissions != "-rw-r--r--" || f.Size != "14" {
		t.Errorf("file (set-uid bit beyond the permissions): %+v", f)
	}
	p := entryOf(control.FileEntry{Path: "/run/fifo", Mode: syscall.S_IFIFO | 0o600}, names)
	if p.Type != fileTypeUnspecified || p.Permissions != "prw-------" {
		t.Errorf("FIFO: %+v", p)
	}
}

func TestRelativePathsAreTheUsersHomes(t *testing.T) {
	u := guestUser{name: "user", home: "/home/user"}
	for in, want := range map[string]string{
		"a/b": "/home/user/a/b", "~": "/home/user", "~/x": "/home/user/x",
		"/etc/../tmp": "/tmp", "../../..": "/",
	} {
		if got := u.resolve(in); got != want {
			t.Errorf("%q: got %q, want %q", in, got, want)
		}
	}
}

// code is the Connect code of err, "" for none.
func code(err error) string {
	if err == nil {
		return ""
	}
	return asRPCError(err).Code
}

func TestFileCallsActAsTheRequestsUser(t *testing.T) {
	sb, f := newFakeSandbox(t)
	ctx := context.Background()
	f.put("/home", syscall.S_IFDIR|0o755, "")
	if _, err := sb.makeDir(ctx, plainUser, &pathRequest{Path: "work/a"}); err != nil {
		t.Fatal(err)
	}
	if _, err := sb.statRPC(ctx, rootUser, &pathRequest{Path: "/home"}); err != nil {
		t.Fatal(err)
	}
	reqs := f.seen()
	var mkdir, stat *control.Request
	for i := range reqs {
		switch {
		case reqs[i].Op == control.OpMkdir:
			mkdir = &reqs[i]
		case reqs[i].Op == control.OpStat && reqs[i].File.Path == "/home":
			stat = &reqs[i]
		}
	}
	if mkdir == nil || mkdir.File.Path != "/home/user/work/a" || mkdir.File.User.UID != 1000 ||
		mkdir.File.User.GID != 1000 || len(mkdir.File.User.Caps) != 0 {
		t.Errorf("the user's mkdir: %+v", mkdir)
	}
	if stat == nil || stat.File.User.UID != 0 || !reflect.DeepEqual(stat.File.User.Caps, rootCaps) {
		t.Errorf("root's stat: %+v (want root's capabilities)", stat)
	}
	if ff := f.file("/home/user/work/a"); ff == nil || ff.uid != 1000 {
		t.Errorf("the directory made: %+v", ff)
	}
}

func TestFileErrnosBecomeEnvdsConnectCodes(t *testing.T) {
	sb, f := newFakeSandbox(t)
	ctx := context.Background()
	f.put("/tmp", syscall.S_IFDIR|0o1777, "")
	f.put("/tmp/file", syscall.S_IFREG|0o644, "data")
	f.put("/tmp/dirlink", syscall.S_IFLNK|0o777, "/tmp")
	f.put("/root", syscall.S_IFDIR|0o700, "")
	f.put("/full", syscall.S_IFDIR|0o755, "")
	f.failOn("/root", syscall.EACCES)
	f.failOn("mkdir /full/new", syscall.ENOSPC)
	f.failOn("/loop", syscall.ELOOP)
	f.failOn("/tmp/nonempty", syscall.ENOTEMPTY)
	f.failOn("/huge", syscall.E2BIG)
	for _, c := range []struct {
		name string
		err  error
		want string
	}{
		{"stat of a missing file", second(sb.statRPC(ctx, plainUser, &pathRequest{Path: "/tmp/nope"})), codeNotFound},
		{"stat the user may not", second(sb.statRPC(ctx, plainUser, &pathRequest{Path: "/root"})), codePermissionDenied},
		{"list of a file", second(sb.listDir(ctx, plainUser, &listDirRequest{Path: "/tmp/file"})), codeInvalidArgument},
		{"list of a missing directory", second(sb.listDir(ctx, plainUser, &listDirRequest{Path: "/nope"})), codeNotFound},
		{"list answered ELOOP (a symlink cycle)", second(sb.listDir(ctx, plainUser, &listDirRequest{Path: "/loop"})), codeFailedPrecondition},
		{"list of more than one answer holds", second(sb.listDir(ctx, plainUser, &listDirRequest{Path: "/huge"})), codeFailedPrecondition},
		{"makeDir of a directory there", second(sb.makeDir(ctx, plainUser, &pathRequest{Path: "/tmp"})), codeAlreadyExists},
		{"makeDir of a symlink to one", second(sb.makeDir(ctx, plainUser, &pathRequest{Path: "/tmp/dirlink"})), codeAlreadyExists},
		{"makeDir of a file", second(sb.makeDir(ctx, plainUser, &pathRequest{Path: "/tmp/file"})), codeInvalidArgument},
		{"makeDir on a full disk", second(sb.makeDir(ctx, plainUser, &pathRequest{Path: "/full/new"})), codeInternal},
		{"move of a missing file", second(sb.move(ctx, plainUser, &moveRequest{Source: "/tmp/nope", Destination: "/tmp/x"})), codeNotFound},
		{"move over a directory not empty", second(sb.move(ctx, plainUser, &moveRequest{Source: "/tmp/nonempty", Destination: "/tmp/x"})), codeFailedPrecondition},
		{"remove of a missing file", second(sb.remove(ctx, plainUser, &pathRequest{Path: "/tmp/nope"})), codeNotFound},
		{"remove the user may not", second(sb.remove(ctx, plainUser, &pathRequest{Path: "/root"})), codePermissionDenied},
	} {
		if got := code(c.err); got != c.want {
			t.Errorf("%s: %v (code %q), want %q", c.name, c.err, got, c.want)
		}
	}
	if f.file("/full/new") != nil {
		t.Error("the failed mkdir made its directory")
	}
}

func second[T any](_ T, err error) error { return err }

func TestFileCallsDoWhatTheSDKAsks(t *testing.T) {
	sb, f := newFakeSandbox(t)
	ctx := context.Background()
	f.put("/etc", syscall.S_IFDIR|0o755, "")
	f.put("/etc/passwd", syscall.S_IFREG|0o644, "root:x:0:0:root:/root:/bin/sh\nuser:x:1000:1000::/home/user:/bin/sh\n")
	f.put("/etc/group", syscall.S_IFREG|0o644, "root:x:0:\nusers:x:1000:\n")
	f.put("/w", syscall.S_IFDIR|0o755, "")
	f.put("/w/b.txt", syscall.S_IFREG|0o644, "bb")
	f.put("/w/a", syscall.S_IFDIR|0o755, "")
	f.put("/w/a/deep", syscall.S_IFREG|0o644, "d")
	f.chown("/w/b.txt", 1000, 1000)

	one, err := sb.listDir(ctx, plainUser, &listDirRequest{Path: "/w"})
	if err != nil {
		t.Fatal(err)
	}
	if len(one.Entries) != 2 || one.Entries[0].Path != "/w/a" || one.Entries[1].Path != "/w/b.txt" ||
		one.Entries[1].Owner != "user" || one.Entries[1].Group != "users" || one.Entries[0].Owner != "root" {
		t.Errorf("depth 1, in path order, named: %+v %+v", one.Entries[0], one.Entries[len(one.Entries)-1])
	}
	two, err := sb.listDir(ctx, plainUser, &listDirRequest{Path: "/w", Depth: 2})
	if err != nil || len(two.Entries) != 3 || two.Entries[1].Path != "/w/a/deep" {
		t.Errorf("depth 2: %v %+v", err, two)
	}
	empty, err := sb.listDir(ctx, plainUser, &listDirRequest{Path: "/w/a/deep/.."})
	if err != nil || empty.Entries == nil {
		t.Errorf("a listing is a list, even of one entry or none: %v %+v", err, empty)
	}
	moved, err := sb.move(ctx, plainUser, &moveRequest{Source: "/w/b.txt", Destination: "/w/c/b2.txt"})
	if err != nil || moved.Entry.Path != "/w/c/b2.txt" || moved.Entry.Size != "2" || moved.Entry.Owner != "user" {
		t.Errorf("move answers the entry at its new path: %v %+v", err, moved)
	}
	made, err := sb.makeDir(ctx, plainUser, &pathRequest{Path: "/w/new/dir"})
	if err != nil || made.Entry.Type != fileTypeDirectory || made.Entry.Path != "/w/new/dir" || made.Entry.Name != "dir" {
		t.Errorf("makeDir answers the directory: %v %+v", err, made)
	}
	if _, err := sb.remove(ctx, plainUser, &pathRequest{Path: "/w/a"}); err != nil {
		t.Fatal(err)
	}
	if f.file("/w/a/deep") != nil {
		t.Error("remove left what the directory held")
	}
}
