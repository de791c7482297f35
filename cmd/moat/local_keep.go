package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"text/tabwriter"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/sentry/fs/overlay"
)

// A sandbox kept with `moat sandbox --keep NAME` is a directory of the
// caller's, keptRoot/NAME, mode 0700, holding
//
//	state.tar      the overlay's upper layer as the last run left it
//	               (sentry/fs/overlay's keep.go: a tar of an overlayfs
//	               upper directory)
//	state.tar.new  a run's save, until it is checked and renamed over
//	               state.tar
//	lock           flock(2)ed for the whole of a run
//
// The sentry writes state.tar.new through a descriptor the CLI opened;
// once it has exited, the CLI takes the file only if it ends with its end
// mark (overlay.Check), so a run whose sentry died while saving leaves
// the previous state.tar as it was.
const (
	keptState    = "state.tar"
	keptStateNew = "state.tar.new"
	keptLock     = "lock"
)

// keepNamePattern is what a kept sandbox may be called: one path element,
// never "." or "..", nor a name a shell or a listing would misread.
// It is compiled on first use, not at init: the sentry and the gofer,
// the same binary, run every package's init and never match it, and an
// idle sandbox keeps what its inits allocated (docs/architecture.md).
var keepNamePattern = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`) })

func checkKeepName(flag, name string) error {
	if !keepNamePattern().MatchString(name) {
		return flagErr(flag, "%q: a name is 1 to 64 letters, digits, '.', '_' and '-', starting with a letter or digit", name)
	}
	return nil
}

// keptRoot is where the caller's kept sandboxes are:
// $XDG_STATE_HOME/moat/sandboxes, else ~/.local/state/moat/sandboxes; ""
// when there is neither.
func keptRoot(environ []string, home string) string {
	for _, kv := range environ {
		if v, ok := strings.CutPrefix(kv, "XDG_STATE_HOME="); ok && filepath.IsAbs(v) {
			return filepath.Join(v, "moat", "sandboxes")
		}
	}
	if home == "" {
		return ""
	}
	return filepath.Join(home, ".local", "state", "moat", "sandboxes")
}

// keptSandbox is a kept sandbox that one run holds locked.
type keptSandbox struct {
	name, dir string
	lock      *os.File
	load      *os.File // state.tar, nil on the first run
	save      *os.File // state.tar.new, empty
}

// openKept locks the kept sandbox name in root, made if it is new, and
// opens its state and the file the run saves to. A sandbox another run
// holds is refused at once, not waited for: an agent's tool call should
// fail plainly rather than hang behind another one.
func openKept(root, name string) (_ *keptSandbox, err error) {
	if root == "" {
		return nil, flagErr("--keep", "no $XDG_STATE_HOME and no home directory to keep sandboxes in")
	}
	if err := os.MkdirAll(root, 0o700); err != nil {
		return nil, flagErr("--keep", "%v", err)
	}
	k := &keptSandbox{name: name, dir: filepath.Join(root, name)}
	if err := os.Mkdir(k.dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return nil, flagErr("--keep", "%v", err)
	}
	if k.lock, err = lockKept(k.dir, "--keep", name); err != nil {
		return nil, err // another run's: nothing of it is this run's to touch
	}
	defer func() {
		if err != nil {
			k.close()
		}
	}()
	k.load, err = os.Open(filepath.Join(k.dir, keptState))
	if errors.Is(err, fs.ErrNotExist) {
		k.load, err = nil, nil
	}
	if err != nil {
		return nil, flagErr("--keep", "%v", err)
	}
	// A state.tar.new left by a run killed before it could check it goes:
	// its sentry may hold it still, and must not write into this run's.
	newPath := filepath.Join(k.dir, keptStateNew)
	if err := os.Remove(newPath); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, flagErr("--keep", "%v", err)
	}
	if k.save, err = os.OpenFile(newPath, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600); err != nil {
		return nil, flagErr("--keep", "%v", err)
	}
	return k, nil
}

// lockKept takes the lock of the kept sandbox in dir, or says that another
// run holds it.
func lockKept(dir, flag, name string) (*os.File, error) {
	f, err := os.OpenFile(filepath.Join(dir, keptLock), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, flagErr(flag, "%v", err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, flagErr(flag, "%s is in use by another moat sandbox run", name)
		}
		return nil, flagErr(flag, "lock %s: %v", name, err)
	}
	return f, nil
}

// commit takes what the sentry saved, now that it has exited, as the
// sandbox's state, if it is whole; else the state stays as it was.
func (k *keptSandbox) commit() error {
	newPath := filepath.Join(k.dir, keptStateNew)
	f, err := os.Open(newPath)
	if err != nil {
		return err
	}
	_, err = overlay.Check(bufio.NewReaderSize(f, 1<<20))
	f.Close()
	if err != nil {
		return err
	}
	if err := k.save.Sync(); err != nil {
		return err
	}
	if err := os.Rename(newPath, filepath.Join(k.dir, keptState)); err != nil {
		return err
	}
	dir, err := os.Open(k.dir)
	if err != nil {
		return err
	}
	defer dir.Close()
	return dir.Sync()
}

// close lets the sandbox go: a save not taken is removed, and so is the
// sandbox itself if no run of it ever saved (nothing is left of a first
// run that failed).
func (k *keptSandbox) close() {
	for _, f := range []*os.File{k.load, k.save} {
		if f != nil {
			f.Close()
		}
	}
	os.Remove(filepath.Join(k.dir, keptStateNew))
	if _, err := os.Stat(filepath.Join(k.dir, keptState)); errors.Is(err, fs.ErrNotExist) {
		os.Remove(filepath.Join(k.dir, keptLock))
		os.Remove(k.dir)
	}
	if k.lock != nil {
		k.lock.Close()
	}
}

// listKept prints the kept sandboxes in root: name, size of the state and
// when a run last saved it.
func listKept(w io.Writer, root string) error {
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tSIZE\tLAST USED")
	if root != "" {
		ents, err := os.ReadDir(root)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("--list: %w", err)
		}
		for _, e := range ents {
			if !e.IsDir() || !keepNamePattern().MatchString(e.Name()) {
				continue
			}
			st, err := os.Stat(filepath.Join(root, e.Name(), keptState))
			if err != nil {
				continue // a first run, not saved yet
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\n", e.Name(), humanBytes(st.Size()), st.ModTime().Format("2006-01-02 15:04:05"))
		}
	}
	return tw.Flush()
}

// removeKept removes the kept sandbox name from root, unless a run holds
// it.
func removeKept(root, name string) error {
	if err := checkKeepName("--rm", name); err != nil {
		return err
	}
	dir := filepath.Join(root, name)
	if _, err := os.Stat(filepath.Join(dir, keptState)); root == "" || err != nil {
		return flagErr("--rm", "no kept sandbox %q (moat sandbox --list shows them)", name)
	}
	lock, err := lockKept(dir, "--rm", name)
	if err != nil {
		return err
	}
	defer lock.Close()
	if err := os.RemoveAll(dir); err != nil {
		return flagErr("--rm", "%v", err)
	}
	return nil
}

// humanBytes is n in B, K, M or G (powers of 1024), as ls -h shows sizes.
func humanBytes(n int64) string {
	const units = "KMGTPE"
	if n < 1024 {
		return fmt.Sprintf("%dB", n)
	}
	f, i := float64(n)/1024, 0
	for ; f >= 1024 && i < len(units)-1; i++ {
		f /= 1024
	}
	return fmt.Sprintf("%.1f%c", f, units[i])
}
