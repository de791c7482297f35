package conformance

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

func TestUnescapeMountinfo(t *testing.T) {
	for in, want := range map[string]string{
		`/tmp/a\040b`: "/tmp/a b",
		`/x\134y`:     `/x\y`,
		`/plain`:      "/plain",
		`/short\04`:   `/short\04`,
	} {
		if got := unescapeMountinfo(in); got != want {
			t.Errorf("unescapeMountinfo(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestCloseUnmounts checks that Close removes an Env whose state root holds
// nested mounts, as a runtime may leave them.
func TestCloseUnmounts(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mounting needs root")
	}
	tmp, err := os.MkdirTemp("", "moat-conformance-test-")
	if err != nil {
		t.Fatal(err)
	}
	outer := filepath.Join(tmp, "state", "with space")
	if err := os.MkdirAll(outer, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mount("tmpfs", outer, "tmpfs", 0, "size=64k"); err != nil {
		t.Fatal(err)
	}
	inner := filepath.Join(outer, "inner")
	if err := os.Mkdir(inner, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mount("tmpfs", inner, "tmpfs", 0, "size=64k"); err != nil {
		t.Fatal(err)
	}
	e := &Env{tmp: tmp}
	if err := e.Close(); err != nil {
		t.Error(err)
	}
	if points, _ := mountPointsUnder(tmp); len(points) != 0 {
		t.Errorf("still mounted: %v", points)
		unmountUnder(tmp)
	}
	if _, err := os.Stat(tmp); !os.IsNotExist(err) {
		t.Errorf("%s still exists (%v)", tmp, err)
		os.RemoveAll(tmp)
	}
}
