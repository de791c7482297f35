package ocirun

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// TestRemoveAllClearsAFakeStateDir: a state directory as a runtime leaves
// it, container directories and files, is removed whole.
func TestRemoveAllClearsAFakeStateDir(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "session")
	for _, d := range []string{"state/runc/c1", "state/runsc/c2/sub", "bundle/rootfs/bin"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "state/runc/c1/state.json"), []byte("{}"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("%s still exists (%v)", dir, err)
	}
}

// TestRemoveAllDetachesNestedMounts: mounts in a state directory, one in
// another and one under a name the kernel escapes, go before it does.
func TestRemoveAllDetachesNestedMounts(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: it mounts tmpfs")
	}
	dir, err := os.MkdirTemp("", "ocirun-test-")
	if err != nil {
		t.Fatal(err)
	}
	outer := filepath.Join(dir, "state", "with space")
	inner := filepath.Join(outer, "inner")
	for _, p := range []string{outer, inner} {
		if err := os.MkdirAll(p, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := syscall.Mount("tmpfs", p, "tmpfs", 0, "size=64k"); err != nil {
			t.Fatal(err)
		}
	}
	if points, err := MountsUnder(dir); err != nil || len(points) != 2 {
		t.Errorf("MountsUnder = %q, %v; want the two mounts", points, err)
	}
	if err := RemoveAll(dir); err != nil {
		t.Error(err)
	}
	if points, _ := MountsUnder(dir); len(points) != 0 {
		t.Errorf("still mounted: %v", points)
		for _, p := range points {
			syscall.Unmount(p, syscall.MNT_DETACH)
		}
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("%s still exists (%v)", dir, err)
		os.RemoveAll(dir)
	}
}
