package ocirun

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

var moatBuild struct {
	once sync.Once
	path string
	err  error
}

// MoatBinary is the moat a test runs: $MOAT_BINARY (make test builds
// bin/moat and passes it), or else one built from this module once per
// test process, so that `go test ./integration/...` works alone.
func MoatBinary(t testing.TB) string {
	t.Helper()
	if p := os.Getenv("MOAT_BINARY"); p != "" {
		return p
	}
	moatBuild.once.Do(func() {
		dir, err := os.MkdirTemp("", "moat-test-binary-")
		if err != nil {
			moatBuild.err = err
			return
		}
		moatBuild.path = filepath.Join(dir, "moat")
		cmd := exec.Command("go", "build", "-o", moatBuild.path, "github.com/moat-sandbox/moat/cmd/moat")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			moatBuild.err = fmt.Errorf("%v\n%s", err, out)
		}
	})
	if moatBuild.err != nil {
		t.Fatalf("build moat: %v", moatBuild.err)
	}
	return moatBuild.path
}
