package overlay_test

import (
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/sentry/fs/overlay"
	"github.com/moat-sandbox/moat/sentry/fs/tmpfs"
	"github.com/moat-sandbox/moat/sentry/memfile"
	"github.com/moat-sandbox/moat/sentry/vfs"
)

var root = &vfs.Creds{Caps: 1<<41 - 1}

var (
	memOnce sync.Once
	mem     *memfile.File
)

// testMem is the memory file the tests' tmpfs layers keep data in.
func testMem(t *testing.T) *memfile.File {
	t.Helper()
	memOnce.Do(func() {
		var err error
		if mem, err = memfile.New(); err != nil {
			t.Fatal(err)
		}
	})
	return mem
}

// layers is an overlay over a lower tmpfs holding
//
//	etc/passwd      "root:x:0:0\n"
//	etc/hosts       "127.0.0.1\n"
//	usr/lib/a       "a", hard-linked as usr/lib/b
//	usr/lib/sub/c   "c"
//	link -> etc/passwd
type layers struct {
	t     *testing.T
	lower vfs.Path
	top   vfs.Path
}

func newLayers(t *testing.T) *layers {
	t.Helper()
	opts := tmpfs.DefaultOptions()
	opts.Mode = 0o755
	l := &layers{t: t, lower: vfs.NewRootMount(tmpfs.New(testMem(t), opts), "tmpfs", 0).Root()}
	for _, d := range []string{"/etc", "/usr", "/usr/lib", "/usr/lib/sub"} {
		l.ok(vfs.Mkdir(root, l.target(l.lower, d), 0o755))
	}
	for name, data := range map[string]string{"/etc/passwd": "root:x:0:0\n", "/etc/hosts": "127.0.0.1\n",
		"/usr/lib/a": "a", "/usr/lib/sub/c": "c"} {
		l.write(l.lower, name, data, unix.O_CREAT)
	}
	l.ok(vfs.Link(root, l.path(l.lower, "/usr/lib/a"), l.target(l.lower, "/usr/lib/b")))
	l.ok(vfs.Symlink(root, l.target(l.lower, "/link"), "etc/passwd"))
	top, err := overlay.New(l.lower.Dentry, tmpfs.New(testMem(t), opts))
	l.ok(err)
	l.top = vfs.NewRootMount(top, "overlay", 0).Root()
	return l
}

func (l *layers) ok(err error) {
	l.t.Helper()
	if err != nil {
		l.t.Fatal(err)
	}
}

func (l *layers) target(r vfs.Path, name string) vfs.Target {
	l.t.Helper()
	tg, err := vfs.Resolver{Root: r, Start: r}.LookupTarget(name)
	l.ok(err)
	return tg
}

func (l *layers) lookup(r vfs.Path, name string) (vfs.Path, error) {
	return vfs.Resolver{Root: r, Start: r}.Lookup(name, false)
}

func (l *layers) path(r vfs.Path, name string) vfs.Path {
	l.t.Helper()
	p, err := l.lookup(r, name)
	l.ok(err)
	return p
}

func (l *layers) stat(r vfs.Path, name string) vfs.Stat {
	l.t.Helper()
	st, err := l.path(r, name).Dentry.Inode().Stat()
	l.ok(err)
	return st
}

// write writes data at offset 0 of name, created with O_CREAT in flags.
func (l *layers) write(r vfs.Path, name, data string, flags int) {
	l.t.Helper()
	var p vfs.Path
	if flags&unix.O_CREAT != 0 {
		var err error
		p, err = vfs.Create(root, l.target(r, name), 0o644)
		l.ok(err)
	} else {
		p = l.path(r, name)
	}
	impl, err := p.Dentry.Inode().Open(unix.O_WRONLY | flags&unix.O_TRUNC)
	l.ok(err)
	f := vfs.NewFile(impl, p, unix.O_WRONLY)
	defer f.DecRef()
	if _, err := f.Write(vfs.NewIOSeqBuffer([]byte(data))); err != nil {
		l.t.Fatal(err)
	}
}

func (l *layers) read(r vfs.Path, name string) string {
	l.t.Helper()
	impl, err := l.path(r, name).Dentry.Inode().Open(unix.O_RDONLY)
	l.ok(err)
	defer impl.Release()
	buf := make([]byte, 4096)
	n, err := impl.Read(vfs.NewIOSeqBuffer(buf), 0)
	l.ok(err)
	return string(buf[:n])
}

func (l *layers) names(r vfs.Path, dir string) string {
	l.t.Helper()
	ents, err := l.path(r, dir).Dentry.Inode().ReadDir()
	l.ok(err)
	var names []string
	for _, e := range ents {
		names = append(names, e.Name)
	}
	sort.Strings(names)
	return strings.Join(names, " ")
}

// dump lists a tree: every name with its type, size and contents.
func (l *layers) dump(r vfs.Path) string {
	l.t.Helper()
	var b strings.Builder
	var walk func(dir string)
	walk = func(dir string) {
		ents, err := l.path(r, dir).Dentry.Inode().ReadDir()
		l.ok(err)
		sort.Slice(ents, func(i, j int) bool { return ents[i].Name < ents[j].Name })
		for _, e := range ents {
			name := strings.TrimSuffix(dir, "/") + "/" + e.Name
			st := l.stat(r, name)
			fmt.Fprintf(&b, "%s %o %d", name, st.Mode, st.Nlink)
			switch st.Type() {
			case unix.S_IFREG:
				fmt.Fprintf(&b, " %q", l.read(r, name))
			case unix.S_IFDIR:
				walk(name)
			}
			b.WriteString("\n")
		}
	}
	walk("/")
	return b.String()
}

func TestWritesNeverReachTheLowerLayer(t *testing.T) {
	l := newLayers(t)
	before := l.dump(l.lower)
	ino := l.stat(l.top, "/etc/passwd").Ino

	l.write(l.top, "/etc/passwd", "changed\n", unix.O_TRUNC)
	l.write(l.top, "/etc/new", "new\n", unix.O_CREAT)
	l.ok(vfs.Chmod(root, l.path(l.top, "/etc/hosts"), 0o600))
	l.ok(vfs.Unlink(root, l.target(l.top, "/usr/lib/sub/c")))
	l.ok(vfs.Rmdir(root, l.target(l.top, "/usr/lib/sub")))
	l.ok(vfs.Mkdir(root, l.target(l.top, "/usr/lib/sub"), 0o700))
	l.ok(vfs.Rename(root, l.target(l.top, "/etc"), l.target(l.top, "/etc2"), 0))
	l.ok(vfs.Symlink(root, l.target(l.top, "/ln2"), "x"))
	l.ok(vfs.Unlink(root, l.target(l.top, "/link")))

	if after := l.dump(l.lower); after != before {
		t.Errorf("the lower layer changed:\n%s\nwas:\n%s", after, before)
	}
	if got := l.read(l.top, "/etc2/passwd"); got != "changed\n" {
		t.Errorf("copied-up file reads %q", got)
	}
	if got := l.stat(l.top, "/etc2/passwd").Ino; got != ino {
		t.Errorf("inode number %d after copy-up and rename, was %d", got, ino)
	}
	if st := l.stat(l.top, "/etc2/hosts"); st.Mode != unix.S_IFREG|0o600 {
		t.Errorf("chmod: mode %o", st.Mode)
	}
	if got := l.names(l.top, "/"); got != "etc2 ln2 usr" {
		t.Errorf("root lists %q", got)
	}
	if got := l.names(l.top, "/etc2"); got != "hosts new passwd" {
		t.Errorf("/etc2 lists %q", got)
	}
	if got := l.names(l.top, "/usr/lib/sub"); got != "" {
		t.Errorf("a directory made over a removed one shows the lower layer's %q", got)
	}
	for _, gone := range []string{"/etc", "/etc/passwd", "/link", "/usr/lib/sub/c"} {
		if _, err := l.lookup(l.top, gone); err != unix.ENOENT {
			t.Errorf("%s: %v, want ENOENT", gone, err)
		}
	}
}

func TestRemovedNamesCanBeMadeAgain(t *testing.T) {
	l := newLayers(t)
	l.ok(vfs.Unlink(root, l.target(l.top, "/etc/hosts")))
	if got := l.names(l.top, "/etc"); got != "passwd" {
		t.Errorf("after unlink /etc lists %q", got)
	}
	l.write(l.top, "/etc/hosts", "again", unix.O_CREAT)
	if got := l.names(l.top, "/etc"); got != "hosts passwd" {
		t.Errorf("after re-creating /etc lists %q", got)
	}
	if got := l.read(l.top, "/etc/hosts"); got != "again" {
		t.Errorf("re-created file reads %q", got)
	}
	err := vfs.Rmdir(root, l.target(l.top, "/usr/lib"))
	if err != unix.ENOTEMPTY {
		t.Errorf("rmdir of a directory with lower entries: %v, want ENOTEMPTY", err)
	}
}

func TestHardLinksSurviveCopyUp(t *testing.T) {
	l := newLayers(t)
	a, b := l.stat(l.top, "/usr/lib/a"), l.stat(l.top, "/usr/lib/b")
	if a.Ino != b.Ino || a.Nlink != 2 {
		t.Fatalf("lower links: inos %d %d, nlink %d", a.Ino, b.Ino, a.Nlink)
	}
	l.write(l.top, "/usr/lib/a", "A", unix.O_TRUNC)
	if got := l.read(l.top, "/usr/lib/b"); got != "A" {
		t.Errorf("the other name reads %q after a write through one", got)
	}
	a, b = l.stat(l.top, "/usr/lib/a"), l.stat(l.top, "/usr/lib/b")
	if a.Ino != b.Ino || a.Nlink != 2 || b.Nlink != 2 {
		t.Errorf("after copy-up: inos %d %d, nlinks %d %d", a.Ino, b.Ino, a.Nlink, b.Nlink)
	}
	l.ok(vfs.Unlink(root, l.target(l.top, "/usr/lib/a")))
	if st := l.stat(l.top, "/usr/lib/b"); st.Nlink != 1 {
		t.Errorf("nlink %d after removing one name", st.Nlink)
	}
}

func TestAnOpenReaderSeesTheCopyUp(t *testing.T) {
	l := newLayers(t)
	impl, err := l.path(l.top, "/etc/hosts").Dentry.Inode().Open(unix.O_RDONLY)
	l.ok(err)
	defer impl.Release()
	l.write(l.top, "/etc/hosts", "::1\n", unix.O_TRUNC)
	buf := make([]byte, 64)
	n, err := impl.Read(vfs.NewIOSeqBuffer(buf), 0)
	l.ok(err)
	if string(buf[:n]) != "::1\n" {
		t.Errorf("a reader opened before the copy-up reads %q", buf[:n])
	}
	st, err := impl.Stat()
	l.ok(err)
	if st.Ino != l.stat(l.top, "/etc/hosts").Ino {
		t.Errorf("fstat and stat disagree on the inode: %d", st.Ino)
	}
}

func TestRenameOverAndExchange(t *testing.T) {
	l := newLayers(t)
	l.ok(vfs.Rename(root, l.target(l.top, "/etc/hosts"), l.target(l.top, "/etc/passwd"), 0))
	if got := l.read(l.top, "/etc/passwd"); got != "127.0.0.1\n" || l.names(l.top, "/etc") != "passwd" {
		t.Errorf("rename over: passwd reads %q, /etc lists %q", got, l.names(l.top, "/etc"))
	}
	l.ok(vfs.Rename(root, l.target(l.top, "/etc"), l.target(l.top, "/usr/lib/sub"), unix.RENAME_EXCHANGE))
	if got := l.names(l.top, "/etc"); got != "c" {
		t.Errorf("after exchange /etc lists %q", got)
	}
	if got := l.names(l.top, "/usr/lib/sub"); got != "passwd" {
		t.Errorf("after exchange /usr/lib/sub lists %q", got)
	}
	err := vfs.Rename(root, l.target(l.top, "/usr/lib/a"), l.target(l.top, "/etc"), 0)
	if err != unix.EISDIR {
		t.Errorf("file over a directory: %v, want EISDIR", err)
	}
	err = vfs.Rename(root, l.target(l.top, "/etc"), l.target(l.top, "/usr"), 0)
	if err != unix.ENOTEMPTY {
		t.Errorf("directory over a full directory: %v, want ENOTEMPTY", err)
	}
}

func TestReadDirAgreesWithStat(t *testing.T) {
	l := newLayers(t)
	l.write(l.top, "/etc/passwd", "x", unix.O_TRUNC) // copied up
	l.write(l.top, "/etc/made", "m", unix.O_CREAT)   // upper only
	ents, err := l.path(l.top, "/etc").Dentry.Inode().ReadDir()
	l.ok(err)
	for _, e := range ents {
		if st := l.stat(l.top, "/etc/"+e.Name); st.Ino != e.Ino {
			t.Errorf("%s: getdents says inode %d, stat %d", e.Name, e.Ino, st.Ino)
		}
	}
}

func TestExtendedAttributesCopyUp(t *testing.T) {
	l := newLayers(t)
	l.ok(vfs.SetXattr(root, l.targetOf(l.lower, "/etc/hosts"), "user.origin", []byte("image"), 0))
	hosts := l.targetOf(l.top, "/etc/hosts")
	if v, err := vfs.GetXattr(root, hosts, "user.origin"); err != nil || string(v) != "image" {
		t.Fatalf("the lower file's attribute through the overlay: %q, %v", v, err)
	}
	l.ok(vfs.SetXattr(root, hosts, "user.added", []byte("top"), 0))
	top := l.targetOf(l.top, "/etc/hosts")
	if v, err := vfs.GetXattr(root, top, "user.origin"); err != nil || string(v) != "image" {
		t.Errorf("the copied-up file lost the lower attribute: %q, %v", v, err)
	}
	if _, err := vfs.GetXattr(root, l.targetOf(l.lower, "/etc/hosts"), "user.added"); err != unix.ENODATA {
		t.Errorf("a change reached the lower file: %v", err)
	}
}

func (l *layers) targetOf(r vfs.Path, name string) vfs.XattrTarget {
	l.t.Helper()
	x, err := vfs.XattrTargetOf(l.path(r, name))
	l.ok(err)
	return x
}
