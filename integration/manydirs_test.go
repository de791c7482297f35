package integration

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// manyDirs is how many directories (and then files) TestManyDirectories
// makes: twice what the gofer's descriptor limit held before directories
// gave their nodes back (RLIMIT_NOFILE, 20,000 on the CI machine).
const manyDirs = 40000

// TestManyDirectories makes 40,000 directories and then 40,000 files
// (testdata/many_dirs.c), stats and removes them all, on a bind-mounted
// host directory and on the overlay root: Linux bounds such a tree by
// inodes alone, and so must the sandbox. Measured on the CI machine
// (2 CPUs, load 3 to 5 from other work): 45 s on the bind mount (natively
// on its ext4, 10 s), 5 s on the overlay; each run is given two minutes.
func TestManyDirectories(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("not root: moat needs root to run a sandbox")
	}
	e := newEnv(t)
	e.buildTestdata("many_dirs")
	must(t, os.Mkdir(filepath.Join(e.bundle, "rootfs", "t"), 0o755))
	bind := t.TempDir()
	for _, where := range []string{"bind", "overlay"} {
		spec := tortureSpec([]string{"/bin/many_dirs", "/t", fmt.Sprint(manyDirs)})
		if where == "bind" {
			spec.Mounts = append(spec.Mounts, specs.Mount{Destination: "/t", Type: "bind", Source: bind,
				Options: []string{"rbind", "rw"}})
		}
		e.writeSpec(spec)
		start := time.Now()
		out, stderr, code, hung := e.runWithTimeout("many-"+where, 2*time.Minute)
		took := time.Since(start)
		if hung || code != 0 {
			t.Fatalf("%s: exit %d (hung %v) after %v: %s\n%s", where, code, hung, took, stderr, out)
		}
		t.Logf("%s: %v (%s)", where, took.Round(time.Millisecond), strings.Join(strings.Fields(out), " "))
		if ents, err := os.ReadDir(bind); err != nil || len(ents) != 0 {
			t.Errorf("%s: the bind mount holds %d entries after the run (%v)", where, len(ents), err)
		}
	}
}
