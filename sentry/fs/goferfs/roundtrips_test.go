package goferfs

import (
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/gofer"
	"github.com/moat-sandbox/moat/sentry/vfs"
)

// servedCounting is served with a relay between the client and the gofer
// that counts the requests sent.
func servedCounting(t *testing.T, dir string) (vfs.Path, *atomic.Int64) {
	t.Helper()
	pair := func() [2]int {
		fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			t.Fatal(err)
		}
		return [2]int{fds[0], fds[1]}
	}
	client, gofr := pair(), pair()
	var requests atomic.Int64
	done := make(chan error, 1)
	go func() {
		done <- gofer.Serve(gofr[1], dir, false)
		unix.Close(gofr[1])
	}()
	relayed := make(chan struct{})
	go func() {
		defer close(relayed)
		defer unix.Close(gofr[0]) // the gofer's Serve then returns
		defer unix.Close(client[1])
		buf, oob := make([]byte, 64<<10), make([]byte, unix.CmsgSpace(4))
		for {
			n, _, _, _, err := unix.Recvmsg(client[1], buf, nil, 0)
			if err != nil || n == 0 {
				return
			}
			requests.Add(1)
			if unix.Sendmsg(gofr[0], buf[:n], nil, nil, 0) != nil {
				return
			}
			n, oobn, _, _, err := unix.Recvmsg(gofr[0], buf, oob, 0)
			if err != nil {
				return
			}
			err = unix.Sendmsg(client[1], buf[:n], oob[:oobn], nil, 0)
			if msgs, perr := unix.ParseSocketControlMessage(oob[:oobn]); perr == nil {
				for _, m := range msgs {
					fds, _ := unix.ParseUnixRights(&m)
					for _, fd := range fds {
						unix.Close(fd) // the client has its own copy
					}
				}
			}
			if err != nil {
				return
			}
		}
	}()
	c := gofer.NewClient(client[0])
	t.Cleanup(func() {
		c.Close()
		<-relayed
		if err := <-done; err != nil {
			t.Errorf("gofer: %v", err)
		}
	})
	root, err := New(c, testMem(t), false)
	if err != nil {
		t.Fatal(err)
	}
	return vfs.NewRootMount(root, "9p", 0).Root(), &requests
}

// Making and removing names in a directory the sandbox made is one round
// trip each: the permission check reads the directory's cached mode and
// owner (which a change of a name in it leaves as they were), and the new
// directory is known empty, so a name made in it is not first looked up.
func TestAChangeOfANameIsOneRoundTrip(t *testing.T) {
	dir := t.TempDir()
	root, requests := servedCounting(t, dir)
	c := me()
	ok(t, vfs.Mkdir(c, target(t, root, "/work"), 0o755))
	const n = 20
	each := func(what string, op func(k int) error) {
		t.Helper()
		before := requests.Load()
		for k := range n {
			if err := op(k); err != nil {
				t.Fatalf("%s %d: %v", what, k, err)
			}
		}
		if got := requests.Load() - before; got != n {
			t.Errorf("%d %s: %d round trips, want %d", n, what, got, n)
		}
	}
	name := func(prefix string, k int) string { return filepath.Join("/work", prefix+string(rune('a'+k))) }
	each("mkdir", func(k int) error { return vfs.Mkdir(c, target(t, root, name("d", k)), 0o755) })
	each("creat and close", func(k int) error {
		p, err := vfs.Create(c, target(t, root, name("f", k)), 0o644)
		if err != nil {
			return err
		}
		impl, err := p.Dentry.Inode().Open(unix.O_WRONLY)
		if err != nil {
			return err
		}
		vfs.NewFile(impl, p, unix.O_WRONLY).DecRef()
		return nil
	})
	each("rename", func(k int) error {
		return vfs.Rename(c, target(t, root, name("f", k)), target(t, root, name("g", k)), 0)
	})
	// A renamed file's change time is asked again at its next stat, but an
	// open's permission check asks nothing.
	before := requests.Load()
	for k := range n {
		if _, err := vfs.AccessStat(lookup(t, root, name("g", k)).Dentry.Inode()); err != nil {
			t.Fatal(err)
		}
	}
	if got := requests.Load() - before; got != 0 {
		t.Errorf("permission attributes of %d renamed files: %d round trips, want 0", n, got)
	}
	each("unlink", func(k int) error { return vfs.Unlink(c, target(t, root, name("g", k))) })
	each("rmdir", func(k int) error { return vfs.Rmdir(c, target(t, root, name("d", k))) })
	if ents, err := os.ReadDir(filepath.Join(dir, "work")); err != nil || len(ents) != 0 {
		t.Errorf("host directory: %d entries, %v", len(ents), err)
	}
	// The directory's own attributes are asked again when it is stat'ed.
	if st := stat(t, lookup(t, root, "/work")); st.Nlink != 2 {
		t.Errorf("link count of the emptied directory: %d, want 2", st.Nlink)
	}
}

// A name the host makes behind the sandbox in a directory the sandbox
// made, after a look-up found it absent, is still the host's to decide:
// making it answers EEXIST, and the next look-up finds it.
func TestANameMadeBehindTheSandboxIsFoundOnceTheHostSaysSo(t *testing.T) {
	dir := t.TempDir()
	root := served(t, dir)
	c := me()
	ok(t, vfs.Mkdir(c, target(t, root, "/w"), 0o755))
	for _, name := range []string{"file", "dir"} {
		if _, err := (vfs.Resolver{Root: root, Start: root}).Lookup("/w/"+name, false); err != unix.ENOENT {
			t.Fatalf("look-up of %s before the host makes it: %v", name, err)
		}
		ok(t, os.WriteFile(filepath.Join(dir, "w", name), nil, 0o644))
	}
	if _, err := vfs.Create(c, target(t, root, "/w/file"), 0o644); err != unix.EEXIST {
		t.Errorf("create over the host's file: %v, want EEXIST", err)
	}
	if err := vfs.Mkdir(c, target(t, root, "/w/dir"), 0o755); err != unix.EEXIST {
		t.Errorf("mkdir over the host's file: %v, want EEXIST", err)
	}
	for _, name := range []string{"file", "dir"} {
		if st := stat(t, lookup(t, root, "/w/"+name)); st.Type() != unix.S_IFREG {
			t.Errorf("%s: type %o", name, st.Type())
		}
	}
}

// A change of a name renews the trust in what the sandbox knows of the
// directory's names while the directory's change time shows that no one
// else changed it, and ends it as soon as it shows someone did.
func TestTheDirectorysChangeTimeRenewsOrEndsWhatIsKnownOfItsNames(t *testing.T) {
	dir := t.TempDir()
	root, requests := servedCounting(t, dir)
	c := me()
	ok(t, vfs.Mkdir(c, target(t, root, "/w"), 0o755))
	w := lookup(t, root, "/w").Dentry.Inode().(*inode)
	age := func(by time.Duration) {
		w.pfMu.Lock()
		w.pf.at = w.pf.at.Add(-by)
		w.pfMu.Unlock()
	}
	age(negativeTTL - 100*time.Millisecond)
	ok(t, vfs.Mkdir(c, target(t, root, "/w/a"), 0o755))
	time.Sleep(200 * time.Millisecond) // past the 2 s of the directory's making
	before := requests.Load()
	ok(t, vfs.Mkdir(c, target(t, root, "/w/b"), 0o755))
	if got := requests.Load() - before; got != 1 {
		t.Errorf("mkdir after the trust was renewed: %d round trips, want 1", got)
	}

	ok(t, os.WriteFile(filepath.Join(dir, "w", "host"), nil, 0o644)) // behind the sandbox
	ok(t, vfs.Mkdir(c, target(t, root, "/w/c"), 0o755))
	if st := stat(t, lookup(t, root, "/w/host")); st.Type() != unix.S_IFREG {
		t.Errorf("the host's file: type %o", st.Type())
	}
	if st := stat(t, lookup(t, root, "/w")); st.Nlink != 5 {
		t.Errorf("link count of /w: %d, want 5 (from the last change's answer)", st.Nlink)
	}
}
