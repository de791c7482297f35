package main

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/internal/control"
)

// A child started with the reserved descriptor has a table larger than
// it from the start, and keeps it across execve: cat's own table.
func TestReserveFDTableSizesTheChildsTable(t *testing.T) {
	f, err := os.Open("/dev/null")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	byFD := map[int]*os.File{control.GoferServeFD: f}
	reserveFDTable(byFD, f)
	if byFD[control.TableFD] == nil {
		var lim unix.Rlimit
		unix.Getrlimit(unix.RLIMIT_NOFILE, &lim)
		t.Skipf("RLIMIT_NOFILE %d is too low to pass fd %d", lim.Cur, control.TableFD)
	}
	cmd := exec.Command("/bin/cat", "/proc/self/status")
	cmd.ExtraFiles = childFDs(byFD)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("cat /proc/self/status: %v", err)
	}
	if size := statusField(t, string(out), "FDSize"); size <= control.TableFD {
		t.Errorf("the child's descriptor table holds %d; want more than %d", size, control.TableFD)
	}
}

// Under a limit too low for the fork child to take the descriptor, it is
// not passed, and the child still starts.
func TestReserveFDTableHeedsTheLimit(t *testing.T) {
	var lim unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatal(err)
	}
	low := lim
	low.Cur = min(lim.Cur, control.TableFD)
	if err := unix.Setrlimit(unix.RLIMIT_NOFILE, &low); err != nil {
		t.Fatal(err)
	}
	defer unix.Setrlimit(unix.RLIMIT_NOFILE, &lim)
	byFD := map[int]*os.File{control.GoferServeFD: os.Stdin}
	reserveFDTable(byFD, os.Stdin)
	if byFD[control.TableFD] != nil {
		t.Errorf("with RLIMIT_NOFILE %d, fd %d is passed", low.Cur, control.TableFD)
	}
	cmd := exec.Command("/bin/true")
	cmd.ExtraFiles = childFDs(byFD)
	if err := cmd.Run(); err != nil {
		t.Errorf("start a child under RLIMIT_NOFILE %d: %v", low.Cur, err)
	}
}

func statusField(t *testing.T, status, name string) int {
	t.Helper()
	for _, line := range strings.Split(status, "\n") {
		if v, ok := strings.CutPrefix(line, name+":"); ok {
			n, err := strconv.Atoi(strings.TrimSpace(v))
			if err != nil {
				t.Fatalf("%s: %v", line, err)
			}
			return n
		}
	}
	t.Fatalf("no %s in /proc/self/status", name)
	return 0
}
