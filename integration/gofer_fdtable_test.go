package integration

import (
	"fmt"
	"os"
	"strconv"
	"testing"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/internal/control"
)

// TestGoferStartsWithItsDescriptorTableSized: the gofer of a running
// container has a descriptor table larger than control.GoferTableFD from
// the start, so that the nodes its walks hold do not make it wait out a
// grace period per doubling (cmd/moat/fdtable.go), and it no longer holds
// the descriptor that sized it.
func TestGoferStartsWithItsDescriptorTableSized(t *testing.T) {
	var lim unix.Rlimit
	must(t, unix.Getrlimit(unix.RLIMIT_NOFILE, &lim))
	if lim.Cur <= control.GoferTableFD+8 {
		t.Skipf("RLIMIT_NOFILE %d is too low for moat to pass fd %d", lim.Cur, control.GoferTableFD)
	}
	e := newEnv(t)
	e.config("sleep", "30")
	if _, errOut, code := e.moatCmd("run", "--bundle", e.bundle, "--detach", "c"); code != 0 {
		t.Fatalf("run --detach: exit %d: %s", code, errOut)
	}
	defer func() {
		e.moatCmd("kill", "c", "KILL")
		e.waitStatus("c", specs.StateStopped)
		e.moatCmd("delete", "c")
	}()
	e.waitStatus("c", specs.StateRunning)
	gofer := goferOf(t, e.bundle)
	size, err := strconv.Atoi(procStatus(t, gofer)["FDSize"])
	must(t, err)
	if size <= control.GoferTableFD {
		t.Errorf("gofer %d: FDSize %d; want more than %d", gofer, size, control.GoferTableFD)
	}
	if target, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%d", gofer, control.GoferTableFD)); err == nil {
		t.Errorf("gofer %d still holds fd %d (%s), which only sized its table", gofer, control.GoferTableFD, target)
	}
}
