package main

import (
	"archive/tar"
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestKeepNamesAreOnePathElement(t *testing.T) {
	for _, good := range []string{"s1", "agent.session-2", "A_b", strings.Repeat("x", 64)} {
		if err := checkKeepName("--keep", good); err != nil {
			t.Errorf("%q refused: %v", good, err)
		}
	}
	for _, bad := range []string{"", ".", "..", "a/b", "../x", ".hidden", "-rf", "a b", "ä", strings.Repeat("x", 65)} {
		err := checkKeepName("--keep", bad)
		var fe *flagError
		if !errors.As(err, &fe) || fe.flag != "--keep" {
			t.Errorf("%q: %v, want a --keep error", bad, err)
		}
	}
}

// writeKeptState writes a whole, empty kept state (its two marks) to f.
func writeKeptState(t *testing.T, f *os.File) {
	t.Helper()
	tw := tar.NewWriter(f)
	for _, rec := range []map[string]string{{"MOAT.keep": "1"}, {"MOAT.keep.end": "0"}} {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeXGlobalHeader, PAXRecords: rec}); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestAKeptSandboxIsTakenOnlyWholeAndByOneRunAtATime(t *testing.T) {
	root := filepath.Join(t.TempDir(), "sandboxes")
	k, err := openKept(root, "s")
	if err != nil {
		t.Fatal(err)
	}
	if k.load != nil {
		t.Errorf("a new sandbox has a state to load")
	}
	if _, err := openKept(root, "s"); err == nil || !strings.Contains(err.Error(), "in use") {
		t.Errorf("a second run of a held sandbox: %v, want in use", err)
	}
	if _, err := os.Stat(filepath.Join(root, "s", keptStateNew)); err != nil {
		t.Errorf("the refused second run took the first one's save: %v", err)
	}
	// A save cut short is not taken; a first run that saved nothing
	// leaves nothing.
	k.save.WriteString("half a tar")
	if err := k.commit(); err == nil {
		t.Errorf("a partial save was taken")
	}
	k.close()
	if _, err := os.Stat(filepath.Join(root, "s")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a first run that never saved left its directory: %v", err)
	}

	k, err = openKept(root, "s")
	if err != nil {
		t.Fatal(err)
	}
	writeKeptState(t, k.save)
	if err := k.commit(); err != nil {
		t.Fatalf("a whole save: %v", err)
	}
	k.close()
	k, err = openKept(root, "s")
	if err != nil {
		t.Fatal(err)
	}
	if k.load == nil {
		t.Fatalf("the saved state is not loaded by the next run")
	}
	saved, _ := os.ReadFile(filepath.Join(root, "s", keptState))
	k.save.WriteString("cut")
	if err := k.commit(); err == nil {
		t.Errorf("a partial save was taken")
	}
	k.close()
	if now, _ := os.ReadFile(filepath.Join(root, "s", keptState)); !bytes.Equal(now, saved) {
		t.Errorf("a failed save changed the state")
	}
	if _, err := os.Stat(filepath.Join(root, "s", keptStateNew)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a failed save left %s: %v", keptStateNew, err)
	}

	var out bytes.Buffer
	if err := listKept(&out, root); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[0], "NAME") || !strings.HasPrefix(lines[1], "s ") {
		t.Errorf("--list:\n%s", out.String())
	}
	if err := removeKept(root, "nope"); err == nil || !strings.Contains(err.Error(), "no kept sandbox") {
		t.Errorf("--rm of an unknown name: %v", err)
	}
	if err := removeKept(root, "s"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "s")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("--rm left the sandbox: %v", err)
	}
}

func TestAKeptRunHidesHomeInTheOverlayUnlessAMountWouldCoverIt(t *testing.T) {
	h := testHost(t)
	home, err := os.MkdirTemp("/var/tmp", "moat-test-home-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(home) })
	h.home, h.cwd, h.keep = home, filepath.Join(home, "proj"), true
	spec, hidden, err := localSpec(localPolicy{}, h, []string{"true"}, false)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(hidden, []string{h.home}) {
		t.Errorf("hidden by the overlay: %q, want the home", hidden)
	}
	if m, ok := mountAtDest(spec, h.home); ok {
		t.Errorf("a kept run's home has a mount: %+v", m)
	}
	// Under /tmp, the sandbox's own tmpfs would cover the overlay's home.
	h = testHost(t)
	h.keep = true
	spec, hidden, err = localSpec(localPolicy{}, h, []string{"true"}, false)
	if err != nil {
		t.Fatal(err)
	}
	if m, ok := mountAtDest(spec, h.home); len(hidden) != 0 || !ok || m.Type != "tmpfs" {
		t.Errorf("home under /tmp: hidden %q, mount %+v %v; want its tmpfs", hidden, m, ok)
	}
	// The kept sandboxes never show, even with --home.
	h = testHost(t)
	h.keptRoot = filepath.Join(h.home, "cache")
	spec, _, err = localSpec(localPolicy{Home: true}, h, []string{"true"}, false)
	if err != nil {
		t.Fatal(err)
	}
	if m, ok := mountAtDest(spec, h.keptRoot); !ok || m.Type != "tmpfs" {
		t.Errorf("the kept sandboxes with --home: %+v %v, want them hidden", m, ok)
	}
}
