package bench

import (
	"path/filepath"
	"testing"
)

// A binary below the working directory is named relative to it, and one in
// the directory itself stays a path, which LookPath does not search $PATH for.
func TestDisplayPath(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	for path, want := range map[string]string{
		filepath.Join(dir, "bin", "runsc"): "bin/runsc",
		filepath.Join(dir, "moat-a"):       "./moat-a",
		"/usr/bin/runc":                    "/usr/bin/runc",
	} {
		if got := displayPath(path); got != want {
			t.Errorf("displayPath(%q) = %q, want %q", path, got, want)
		}
	}
}
