package boot

import (
	"bytes"
	"crypto/rand"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/internal/control"
	"github.com/moat-sandbox/moat/sentry/fs/tmpfs"
	"github.com/moat-sandbox/moat/sentry/vfs"
)

// The capabilities moat serve gives root: the file ones of a container's
// root.
var fileRootCaps = []string{"CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_FSETID", "CAP_FOWNER"}

// fileTree is a tmpfs tree as a small image has it: / and /etc root's
// (0755), /root (0700) holding a secret, /tmp (1777) holding a file of
// root's, and /home/u (0755) of user 1000.
func fileTree(t *testing.T) (root, user *fileActor) {
	t.Helper()
	top := vfs.NewRootMount(tmpfsWithMode(t, 0o755), "tmpfs", 0).Root()
	var err error
	if root, err = newFileActor(top, control.FileUser{Caps: fileRootCaps}); err != nil {
		t.Fatal(err)
	}
	if user, err = newFileActor(top, control.FileUser{UID: 1000, GID: 1000}); err != nil {
		t.Fatal(err)
	}
	for _, d := range []struct {
		name string
		mode uint32
	}{{"/etc", 0o755}, {"/root", 0o700}, {"/tmp", 0o1777}, {"/home/u", 0o755}} {
		if err := root.mkdirAll(d.name); err != nil {
			t.Fatal(err)
		}
		if err := vfs.Chmod(root.creds, lookup(t, top, d.name), d.mode); err != nil {
			t.Fatal(err)
		}
	}
	if err := vfs.Chown(root.creds, lookup(t, top, "/home/u"), 1000, 1000); err != nil {
		t.Fatal(err)
	}
	writeAs(t, root, "/root/secret", "root only")
	writeAs(t, root, "/etc/shadow", "hashes")
	if err := vfs.Chmod(root.creds, lookup(t, top, "/etc/shadow"), 0o600); err != nil {
		t.Fatal(err)
	}
	writeAs(t, root, "/tmp/roots", "in a sticky directory")
	return root, user
}

func tmpfsWithMode(t *testing.T, mode uint32) *vfs.Dentry {
	t.Helper()
	opts := tmpfs.DefaultOptions()
	opts.Mode = mode
	return tmpfs.New(memFile(t), opts)
}

func writeAs(t *testing.T, a *fileActor, name, data string) {
	t.Helper()
	f, err := a.openWrite(name, newFileMode)
	if err != nil {
		t.Fatalf("open %s to write: %v", name, err)
	}
	defer f.DecRef()
	if err := copyIn(f, strings.NewReader(data)); err != nil {
		t.Fatalf("write %s: %v", name, err)
	}
}

func readAs(a *fileActor, name string) (string, error) {
	f, _, err := a.openRead(name)
	if err != nil {
		return "", err
	}
	defer f.DecRef()
	var b bytes.Buffer
	err = copyOut(&b, f)
	return b.String(), err
}

func TestFileOpsKeepRootsFilesRoots(t *testing.T) {
	root, user := fileTree(t)
	// /root is not searchable for the user: even its entries' attributes
	// are out of reach, as on Linux.
	if _, err := user.stat("/root/secret"); err != unix.EACCES {
		t.Errorf("user stat /root/secret: %v, want EACCES", err)
	}
	if _, err := user.list("/root", 1); err != unix.EACCES {
		t.Errorf("user list /root: %v, want EACCES", err)
	}
	if _, err := readAs(user, "/etc/shadow"); err != unix.EACCES {
		t.Errorf("user read /etc/shadow (0600): %v, want EACCES", err)
	}
	if got, err := readAs(root, "/etc/shadow"); err != nil || got != "hashes" {
		t.Errorf("root read /etc/shadow: %q, %v", got, err)
	}
	if _, err := user.openWrite("/etc/passwd", newFileMode); err != unix.EACCES {
		t.Errorf("user creates in /etc: %v, want EACCES", err)
	}
	if _, err := user.openWrite("/etc/shadow", newFileMode); err != unix.EACCES {
		t.Errorf("user truncates /etc/shadow: %v, want EACCES", err)
	}
	if err := user.mkdirAll("/etc/x/y"); err != unix.EACCES {
		t.Errorf("user mkdir -p /etc/x/y: %v, want EACCES", err)
	}
	// The sticky bit: another's file in /tmp is not the user's to remove
	// or rename, though /tmp is writable.
	if err := user.remove("/tmp/roots"); err != unix.EPERM {
		t.Errorf("user removes root's file in /tmp: %v, want EPERM", err)
	}
	if err := user.rename("/tmp/roots", "/tmp/mine"); err != unix.EPERM {
		t.Errorf("user renames root's file in /tmp: %v, want EPERM", err)
	}
	if err := user.remove("/root"); err != unix.EACCES {
		t.Errorf("user rm -rf /root: %v, want EACCES", err)
	}
	if _, err := root.stat("/root/secret"); err != nil {
		t.Errorf("root's secret went: %v", err)
	}
}

func TestFileWriteMakesTheUsersFileAndTruncates(t *testing.T) {
	_, user := fileTree(t)
	writeAs(t, user, "/home/u/new/dir/f", "a longer first version")
	for _, name := range []string{"/home/u/new", "/home/u/new/dir", "/home/u/new/dir/f"} {
		e, err := user.stat(name)
		if err != nil {
			t.Fatal(err)
		}
		want := uint32(unix.S_IFDIR | newDirMode)
		if strings.HasSuffix(name, "/f") {
			want = unix.S_IFREG | newFileMode
		}
		if e.UID != 1000 || e.GID != 1000 || e.Mode != want {
			t.Errorf("%s: uid %d gid %d mode %#o; want the user's, mode %#o", name, e.UID, e.GID, e.Mode, want)
		}
	}
	writeAs(t, user, "/home/u/new/dir/f", "short")
	if got, err := readAs(user, "/home/u/new/dir/f"); err != nil || got != "short" {
		t.Errorf("after the second write: %q, %v; want the file truncated", got, err)
	}
	if e, _ := user.stat("/home/u/new/dir/f"); e.Size != 5 {
		t.Errorf("size %d, want 5", e.Size)
	}
	if _, err := user.openWrite("/home/u/new", newFileMode); err != unix.EISDIR {
		t.Errorf("writing a directory: %v, want EISDIR", err)
	}
	if _, _, err := user.openRead("/home/u/new"); err != unix.EISDIR {
		t.Errorf("reading a directory: %v, want EISDIR", err)
	}
	if _, err := user.openWrite("/home/u/new/dir/f/g", newFileMode); err != unix.ENOTDIR {
		t.Errorf("writing below a file: %v, want ENOTDIR", err)
	}
	if _, _, err := user.openRead("/home/u/none"); err != unix.ENOENT {
		t.Errorf("reading a missing file: %v, want ENOENT", err)
	}
	if _, _, err := user.openRead("home/u/new/dir/f"); err != unix.EINVAL {
		t.Errorf("a relative path: %v, want EINVAL", err)
	}
}

func TestFileDataStreamsWhole(t *testing.T) {
	root, _ := fileTree(t)
	data := make([]byte, 3*ioChunk+123)
	rand.Read(data)
	f, err := root.openWrite("/tmp/big", newFileMode)
	if err != nil {
		t.Fatal(err)
	}
	if err := copyIn(f, bytes.NewReader(data)); err != nil {
		t.Fatal(err)
	}
	f.DecRef()
	f, e, err := root.openRead("/tmp/big")
	if err != nil {
		t.Fatal(err)
	}
	defer f.DecRef()
	var got bytes.Buffer
	if err := copyOut(&got, f); err != nil || !bytes.Equal(got.Bytes(), data) || e.Size != int64(len(data)) {
		t.Errorf("read back %d bytes (entry: %d), %v; want the %d written", got.Len(), e.Size, err, len(data))
	}
}

func TestFileListGoesDepthLevelsDownWithoutFollowing(t *testing.T) {
	root, user := fileTree(t)
	writeAs(t, user, "/home/u/a/b/c/deep", "x")
	writeAs(t, user, "/home/u/top", "x")
	if err := vfs.Symlink(user.creds, vfs.Target{Dir: lookup(t, user.root, "/home/u"), Name: "link"}, "/root"); err != nil {
		t.Fatal(err)
	}
	paths := func(es []control.FileEntry) []string {
		var ps []string
		for _, e := range es {
			ps = append(ps, e.Path)
		}
		slices.Sort(ps)
		return ps
	}
	one, err := user.list("/home/u", 1)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := paths(one), []string{"/home/u/a", "/home/u/link", "/home/u/top"}; !slices.Equal(got, want) {
		t.Errorf("depth 1: %q, want %q", got, want)
	}
	for _, e := range one {
		if e.Path == "/home/u/link" && (e.Mode&unix.S_IFMT != unix.S_IFLNK || e.Target != "/root") {
			t.Errorf("the symlink's entry: %+v", e)
		}
	}
	three, err := user.list("/home/u/", 3)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := paths(three), []string{"/home/u/a", "/home/u/a/b", "/home/u/a/b/c", "/home/u/link", "/home/u/top"}; !slices.Equal(got, want) {
		t.Errorf("depth 3: %q, want %q", got, want)
	}
	// Below a directory the user may not read, the listing goes on.
	writeAs(t, root, "/home/u/a/hidden/h", "x")
	if err := vfs.Chmod(root.creds, lookup(t, root.root, "/home/u/a/hidden"), 0o700); err != nil {
		t.Fatal(err)
	}
	if all, err := user.list("/home/u", 10); err != nil || !slices.Contains(paths(all), "/home/u/a/hidden") ||
		slices.Contains(paths(all), "/home/u/a/hidden/h") {
		t.Errorf("with an unreadable directory: %q, %v", paths(all), err)
	}
	if _, err := user.list("/home/u/top", 1); err != unix.ENOTDIR {
		t.Errorf("listing a file: %v, want ENOTDIR", err)
	}
}

func TestFileMkdirRenameRemoveAsTheirTools(t *testing.T) {
	_, user := fileTree(t)
	if err := user.mkdirAll("/home/u/m/n"); err != nil {
		t.Fatal(err)
	}
	if err := user.mkdirAll("/home/u/m/n"); err != nil {
		t.Errorf("mkdir -p of a directory there: %v", err)
	}
	writeAs(t, user, "/home/u/m/file", "x")
	if err := user.mkdirAll("/home/u/m/file"); err != unix.EEXIST {
		t.Errorf("mkdir -p of a file: %v, want EEXIST", err)
	}
	if err := user.mkdirAll("/home/u/m/file/sub"); err != unix.ENOTDIR {
		t.Errorf("mkdir -p below a file: %v, want ENOTDIR", err)
	}
	// A symlink to nothing is not made through: mkdir(2) of its name is
	// EEXIST, and a lookup through it ENOENT, for good (the mkdir -p
	// that retried that forever never answered).
	if err := vfs.Symlink(user.creds, vfs.Target{Dir: lookup(t, user.root, "/home/u/m"), Name: "dangling"}, "nowhere"); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"/home/u/m/dangling", "/home/u/m/dangling/below"} {
		if err := user.mkdirAll(name); err != unix.EEXIST {
			t.Errorf("mkdir -p %s: %v, want EEXIST", name, err)
		}
	}
	if _, err := user.openWrite("/home/u/m/dangling/f", newFileMode); err != unix.ENOTDIR {
		t.Errorf("writing below a dangling symlink: %v, want ENOTDIR", err)
	}
	if _, err := user.stat("/home/u/m/nowhere"); err != unix.ENOENT {
		t.Errorf("the symlink's target was made: %v", err)
	}
	if err := user.rename("/home/u/m/file", "/home/u/elsewhere/renamed"); err != nil {
		t.Fatal(err)
	}
	if got, err := readAs(user, "/home/u/elsewhere/renamed"); err != nil || got != "x" {
		t.Errorf("renamed file: %q, %v", got, err)
	}
	if err := user.rename("/home/u/m/file", "/home/u/x"); err != unix.ENOENT {
		t.Errorf("renaming what is gone: %v, want ENOENT", err)
	}
	if err := user.rename("/home/u/m", "/home/u/elsewhere"); err != unix.ENOTEMPTY {
		t.Errorf("renaming over a directory that holds a file: %v, want ENOTEMPTY", err)
	}
	writeAs(t, user, "/home/u/m/n/o/p", "x")
	if err := user.remove("/home/u/m"); err != nil {
		t.Fatal(err)
	}
	if _, err := user.stat("/home/u/m"); err != unix.ENOENT {
		t.Errorf("after rm -rf: %v, want ENOENT", err)
	}
	if err := user.remove("/home/u/m"); err != unix.ENOENT {
		t.Errorf("removing what is gone: %v, want ENOENT", err)
	}
	// The root is refused before anything in it goes, as rmdir("/")
	// is EBUSY.
	if err := user.remove("/"); err != unix.EBUSY {
		t.Errorf("removing /: %v, want EBUSY", err)
	}
	if _, err := user.stat("/home/u/elsewhere/renamed"); err != nil {
		t.Errorf("removing / removed the user's file: %v", err)
	}
}

func TestFileListPastItsRoomIsE2BIG(t *testing.T) {
	_, user := fileTree(t)
	for _, n := range []string{"a", "b", "c"} {
		writeAs(t, user, "/home/u/d/"+n, "x")
	}
	all, err := user.list("/home/u", 2)
	if err != nil {
		t.Fatal(err)
	}
	need := 0
	for _, e := range all {
		need += control.EntrySize(e)
	}
	user.listRoom = need
	if got, err := user.list("/home/u", 2); err != nil || len(got) != len(all) {
		t.Errorf("in exactly its room: %d entries, %v; want %d", len(got), err, len(all))
	}
	user.listRoom = need - 1
	if _, err := user.list("/home/u", 2); !errors.Is(err, unix.E2BIG) {
		t.Errorf("one byte past its room: %v, want E2BIG", err)
	}
	// A directory's names alone are weighed before their entries are
	// made: three names of one byte need three minEntrySize and three.
	d := lookup(t, user.root, "/home/u/d")
	if names, err := user.names(d, 3*minEntrySize+3); err != nil || len(names) != 3 {
		t.Errorf("names in their room: %q, %v", names, err)
	}
	if _, err := user.names(d, 3*minEntrySize+2); !errors.Is(err, unix.E2BIG) {
		t.Errorf("names past their room: %v, want E2BIG", err)
	}
	// The answer says E2BIG and names the bound.
	resp := errorResponse(fmt.Errorf("list /home/u: %w", errListTooLarge))
	if resp.Errno != int(unix.E2BIG) || !strings.Contains(resp.Error, "64 MiB") {
		t.Errorf("the answer: %+v", resp)
	}
}
