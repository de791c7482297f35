package overlay_test

import (
	"archive/tar"
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/sentry/fs/overlay"
	"github.com/moat-sandbox/moat/sentry/fs/tmpfs"
	"github.com/moat-sandbox/moat/sentry/vfs"
)

// again is a second overlay over l's lower layer, with an empty upper
// layer: the next run of a kept sandbox.
func (l *layers) again() vfs.Path {
	l.t.Helper()
	opts := tmpfs.DefaultOptions()
	opts.Mode = 0o755
	top, err := overlay.New(l.lower.Dentry, tmpfs.New(testMem(l.t), opts))
	l.ok(err)
	return vfs.NewRootMount(top, "overlay", 0).Root()
}

func (l *layers) save(r vfs.Path, hidden ...string) []byte {
	l.t.Helper()
	var buf bytes.Buffer
	l.ok(overlay.Save(r.Dentry, &buf, hidden))
	return buf.Bytes()
}

// changeEverything makes, over newLayers' lower layer, one change of each
// kind a kept state holds.
func (l *layers) changeEverything() {
	l.t.Helper()
	top := l.top
	l.write(top, "/etc/passwd", "changed\n", unix.O_TRUNC)                 // copied up
	l.ok(vfs.Unlink(root, l.target(top, "/etc/hosts")))                    // whiteout
	l.ok(vfs.Unlink(root, l.target(top, "/usr/lib/sub/c")))                // whiteout, then
	l.ok(vfs.Rmdir(root, l.target(top, "/usr/lib/sub")))                   // whiteout, then
	l.ok(vfs.Mkdir(root, l.target(top, "/usr/lib/sub"), 0o700))            // opaque over the lower one
	l.write(top, "/usr/lib/sub/d", "d", unix.O_CREAT)                      // in the opaque directory
	l.ok(vfs.Mkdir(root, l.target(top, "/opt"), 0o755))                    // new
	l.ok(vfs.Mkdir(root, l.target(top, "/opt/x"), 0o2750))                 // new, setgid
	l.write(top, "/opt/x/f", strings.Repeat("data", 300000), unix.O_CREAT) // > one copy chunk
	l.ok(vfs.Chown(root, l.path(top, "/opt/x/f"), 1000, 1001))
	l.ok(vfs.Chmod(root, l.path(top, "/opt/x/f"), 0o4711))                   // after chown, which clears setuid
	l.ok(vfs.Link(root, l.path(top, "/opt/x/f"), l.target(top, "/opt/x/g"))) // hard link
	l.ok(vfs.Symlink(root, l.target(top, "/opt/ln"), "x/f"))
	l.ok(vfs.Mknod(root, l.target(top, "/opt/fifo"), unix.S_IFIFO|0o640, 0))
	l.write(top, "/opt/empty", "", unix.O_CREAT)
	l.ok(vfs.Utimes(root, l.path(top, "/opt/empty"), &[2]unix.Timespec{{Sec: 1000, Nsec: 5}, {Sec: 2000, Nsec: 7}}))
	x, err := vfs.XattrTargetOf(l.path(top, "/opt/x/f"))
	l.ok(err)
	l.ok(vfs.SetXattr(root, x, "user.origin", []byte("pip"), 0))
	l.ok(vfs.Chmod(root, l.path(top, "/opt/x"), 0o2750)) // setgid
}

func TestAKeptStateComesBackAsItWasSaved(t *testing.T) {
	l := newLayers(t)
	lowerBefore := l.dump(l.lower)
	l.changeEverything()
	state := l.save(l.top)
	if n, err := overlay.Check(bytes.NewReader(state)); err != nil || n == 0 {
		t.Fatalf("Check of a whole state: %d entries, %v", n, err)
	}

	next := l.again()
	l.ok(overlay.Load(next.Dentry, bytes.NewReader(state)))
	// Saved again before anything reads it (a read moves atimes), it is
	// the same stream: nothing was lost or added.
	if again := l.save(next); !bytes.Equal(again, state) {
		t.Errorf("the loaded tree saves as %d bytes, not as the %d it was loaded from", len(again), len(state))
	}
	if got := l.names(next, "/etc"); got != "passwd" {
		t.Errorf("/etc lists %q: the whiteout of hosts did not come back", got)
	}
	if got := l.names(next, "/usr/lib/sub"); got != "d" {
		t.Errorf("/usr/lib/sub lists %q: the opaque directory shows the lower one's c", got)
	}
	f, g := l.stat(next, "/opt/x/f"), l.stat(next, "/opt/x/g")
	if f.Ino != g.Ino || f.Nlink != 2 {
		t.Errorf("hard links: f ino %d nlink %d, g ino %d", f.Ino, f.Nlink, g.Ino)
	}
	if f.Mode != unix.S_IFREG|0o4711 || f.UID != 1000 || f.GID != 1001 {
		t.Errorf("f: mode %o owner %d:%d", f.Mode, f.UID, f.GID)
	}
	if st := l.stat(next, "/opt/x"); st.Mode != unix.S_IFDIR|0o2750 {
		t.Errorf("/opt/x: mode %o", st.Mode)
	}
	if st := l.stat(next, "/opt/empty"); st.Atime != (unix.Timespec{Sec: 1000, Nsec: 5}) || st.Mtime != (unix.Timespec{Sec: 2000, Nsec: 7}) {
		t.Errorf("/opt/empty: atime %v mtime %v", st.Atime, st.Mtime)
	}
	if ln, err := l.path(next, "/opt/ln").Dentry.Inode().Readlink(); err != nil || ln != "x/f" {
		t.Errorf("/opt/ln -> %q, %v", ln, err)
	}
	x, err := vfs.XattrTargetOf(l.path(next, "/opt/x/f"))
	l.ok(err)
	if v, err := vfs.GetXattr(root, x, "user.origin"); err != nil || string(v) != "pip" {
		t.Errorf("user.origin: %q, %v", v, err)
	}
	if after := l.dump(l.lower); after != lowerBefore {
		t.Errorf("the lower layer changed:\n%s\nwas:\n%s", after, lowerBefore)
	}
	if got, want := l.dump(next), l.dump(l.top); got != want {
		t.Errorf("loaded tree:\n%s\nsaved tree:\n%s", got, want)
	}
}

// The format is overlayfs's upper directory in a tar stream: a tool that
// knows nothing of moat reads it.
func TestAKeptStateIsATarOfAnOverlayfsUpperDirectory(t *testing.T) {
	l := newLayers(t)
	l.changeEverything()
	tr := tar.NewReader(bytes.NewReader(l.save(l.top)))
	got := map[string]*tar.Header{}
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		}
		l.ok(err)
		got[hdr.Name] = hdr
	}
	if h := got["etc/hosts"]; h == nil || h.Typeflag != tar.TypeChar || h.Devmajor != 0 || h.Devminor != 0 {
		t.Errorf("etc/hosts: %+v, want a 0:0 character device (a whiteout)", h)
	}
	if h := got["usr/lib/sub/"]; h == nil || h.PAXRecords["SCHILY.xattr.trusted.overlay.opaque"] != "y" {
		t.Errorf("usr/lib/sub/: %+v, want trusted.overlay.opaque=y", h)
	}
	if h := got["usr/lib/"]; h == nil || h.PAXRecords["SCHILY.xattr.trusted.overlay.opaque"] != "" {
		t.Errorf("usr/lib/ (merged with the lower one): %+v, want no opaque mark", h)
	}
	if h := got["opt/x/g"]; h == nil || h.Typeflag != tar.TypeLink || h.Linkname != "opt/x/f" {
		t.Errorf("opt/x/g: %+v, want a hard link to opt/x/f", h)
	}
	if h := got["etc/passwd"]; h == nil || h.Typeflag != tar.TypeReg || h.Size != int64(len("changed\n")) {
		t.Errorf("etc/passwd: %+v", h)
	}
	if _, ok := got["usr/lib/a"]; ok {
		t.Errorf("usr/lib/a, never changed, is in the state")
	}
}

func TestACutKeptStateIsRefused(t *testing.T) {
	l := newLayers(t)
	l.changeEverything()
	state := l.save(l.top)
	// The last 2048 bytes are the end mark (a header and its record) and
	// tar's two zero blocks: any cut before the mark loses entries.
	for cut := 0; cut < len(state)-2048; cut += 509 {
		short := state[:cut]
		if _, err := overlay.Check(bytes.NewReader(short)); err == nil {
			t.Fatalf("Check passed the state cut at %d of %d bytes", cut, len(state))
		}
		if err := overlay.Load(l.again().Dentry, bytes.NewReader(short)); err == nil {
			t.Fatalf("Load took the state cut at %d of %d bytes", cut, len(state))
		}
	}
}

// keptState is a state of the given entries, with its marks.
func keptState(t *testing.T, entries ...*tar.Header) []byte {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	must := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	must(tw.WriteHeader(&tar.Header{Typeflag: tar.TypeXGlobalHeader, PAXRecords: map[string]string{"MOAT.keep": "1"}}))
	for _, h := range entries {
		must(tw.WriteHeader(h))
		if h.Size > 0 {
			_, err := tw.Write(make([]byte, h.Size))
			must(err)
		}
	}
	must(tw.WriteHeader(&tar.Header{Typeflag: tar.TypeXGlobalHeader, PAXRecords: map[string]string{"MOAT.keep.end": "0"}}))
	must(tw.Close())
	return buf.Bytes()
}

func TestAKeptStateNamingAPathOutsideOrTwiceIsRefused(t *testing.T) {
	l := newLayers(t)
	for name, entries := range map[string][]*tar.Header{
		"absolute":      {{Typeflag: tar.TypeReg, Name: "/etc/abs", Mode: 0o644}},
		"dot-dot":       {{Typeflag: tar.TypeReg, Name: "../escape", Mode: 0o644}},
		"dot-dot-deep":  {{Typeflag: tar.TypeReg, Name: "etc/../../escape", Mode: 0o644}},
		"twice":         {{Typeflag: tar.TypeReg, Name: "etc/new", Mode: 0o644}, {Typeflag: tar.TypeReg, Name: "etc/new", Mode: 0o644}},
		"under a file":  {{Typeflag: tar.TypeReg, Name: "etc/passwd/x", Mode: 0o644}},
		"link outside":  {{Typeflag: tar.TypeLink, Name: "etc/l", Linkname: "../x"}},
		"link to a dir": {{Typeflag: tar.TypeLink, Name: "etc/l", Linkname: "usr"}},
		"bad mode":      {{Typeflag: tar.TypeReg, Name: "etc/m", Mode: 0o170644}},
		"socket-like":   {{Typeflag: 'S', Name: "etc/s", Mode: 0o644}},
		"root a file":   {{Typeflag: tar.TypeReg, Name: ".", Mode: 0o644}},
	} {
		err := overlay.Load(l.again().Dentry, bytes.NewReader(keptState(t, entries...)))
		if err == nil {
			t.Errorf("%s: loaded", name)
		}
	}
	// Data comes as the entry has it.
	next := l.again()
	l.ok(overlay.Load(next.Dentry, bytes.NewReader(keptState(t, &tar.Header{Typeflag: tar.TypeReg, Name: "etc/abs", Mode: 0o600, Size: 3}))))
	if got := l.read(next, "/etc/abs"); got != "\x00\x00\x00" {
		t.Errorf("/etc/abs reads %q", got)
	}
	if err := overlay.Load(l.again().Dentry, strings.NewReader("not a tar at all")); err == nil {
		t.Errorf("loaded a stream that is not a tar")
	}
	var plain bytes.Buffer
	tw := tar.NewWriter(&plain)
	l.ok(tw.Close())
	if err := overlay.Load(l.again().Dentry, &plain); err == nil {
		t.Errorf("loaded an empty tar with no marks")
	}
}

func TestAHiddenDirectoryKeepsItsFilesAndNotItsMark(t *testing.T) {
	l := newLayers(t)
	l.ok(overlay.Hide(l.top.Dentry, "/etc", 0o751, 7, 8))
	if got := l.names(l.top, "/etc"); got != "" {
		t.Errorf("hidden /etc lists %q", got)
	}
	if st := l.stat(l.top, "/etc"); st.Mode != unix.S_IFDIR|0o751 || st.UID != 7 || st.GID != 8 {
		t.Errorf("hidden /etc: mode %o owner %d:%d", st.Mode, st.UID, st.GID)
	}
	l.write(l.top, "/etc/mine", "mine", unix.O_CREAT)
	state := l.save(l.top, "/etc")

	// Hidden again, it shows what was written in it alone...
	next := l.again()
	l.ok(overlay.Load(next.Dentry, bytes.NewReader(state)))
	l.ok(overlay.Hide(next.Dentry, "/etc", 0o755, 0, 0))
	if got := l.names(next, "/etc"); got != "mine" {
		t.Errorf("hidden again, /etc lists %q", got)
	}
	if st := l.stat(next, "/etc"); st.UID != 7 {
		t.Errorf("hidden again, /etc is owned by %d: Hide replaced the kept directory", st.UID)
	}
	// ...and not hidden, the lower layer's files beside it.
	shown := l.again()
	l.ok(overlay.Load(shown.Dentry, bytes.NewReader(state)))
	if got := l.names(shown, "/etc"); got != "hosts mine passwd" {
		t.Errorf("not hidden, /etc lists %q", got)
	}
	if err := overlay.Hide(l.again().Dentry, "/etc/passwd", 0o755, 0, 0); !errors.Is(err, unix.ENOTDIR) {
		t.Errorf("Hide of a file: %v, want ENOTDIR", err)
	}
	if err := overlay.Hide(l.again().Dentry, "/nowhere/x", 0o755, 0, 0); !errors.Is(err, unix.ENOENT) {
		t.Errorf("Hide below a missing directory: %v, want ENOENT", err)
	}
}

// Removing a lower file copies nothing up: the whiteout lives in a
// directory the upper layer does not have, and must be kept all the same.
func TestAKeptStateKeepsARemovalInADirectoryNeverCopiedUp(t *testing.T) {
	l := newLayers(t)
	l.ok(vfs.Unlink(root, l.target(l.top, "/usr/lib/sub/c")))
	next := l.again()
	l.ok(overlay.Load(next.Dentry, bytes.NewReader(l.save(l.top))))
	if got := l.names(next, "/usr/lib/sub"); got != "" {
		t.Errorf("/usr/lib/sub lists %q: the removal of c was not kept", got)
	}
	if got := l.names(next, "/usr/lib"); got != "a b sub" {
		t.Errorf("/usr/lib lists %q, want it merged with the lower one", got)
	}
}
