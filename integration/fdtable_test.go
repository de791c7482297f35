package integration

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/internal/confine"
)

// TestSentryAndGoferStartWithTheirDescriptorTablesSized: the sentry and
// the gofer of a running container have descriptor tables larger than
// confine.TableFD from the start, so that the host files they come to
// hold do not make them wait out a grace period per doubling (capdrop
// sized them: internal/confine/capdrop.go), and neither still holds the
// descriptor that sized it.
func TestSentryAndGoferStartWithTheirDescriptorTablesSized(t *testing.T) {
	var lim unix.Rlimit
	must(t, unix.Getrlimit(unix.RLIMIT_NOFILE, &lim))
	if lim.Cur <= confine.TableFD+16 {
		t.Skipf("RLIMIT_NOFILE %d is too low for capdrop to take fd %d", lim.Cur, confine.TableFD)
	}
	e := newEnv(t)
	sentry := e.runSleeper()
	for what, pid := range map[string]int{"sentry": sentry, "gofer": goferOf(t, e.bundle)} {
		size, err := strconv.Atoi(procStatus(t, pid)["FDSize"])
		must(t, err)
		if size <= confine.TableFD {
			t.Errorf("%s %d: FDSize %d; want more than %d", what, pid, size, confine.TableFD)
		}
		target, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%d", pid, confine.TableFD))
		switch {
		case err == nil:
			t.Errorf("%s %d still holds fd %d (%s), which only sized its table", what, pid, confine.TableFD, target)
		case !errors.Is(err, fs.ErrNotExist):
			t.Errorf("%s %d: cannot tell whether it holds fd %d: %v", what, pid, confine.TableFD, err)
		}
	}
}

// TestALowDescriptorLimitStillStartsTheSandbox: under an RLIMIT_NOFILE
// below confine.TableFD, capdrop cannot size the descriptor tables, and
// the sandbox starts all the same (the tables then grow as they would).
func TestALowDescriptorLimitStillStartsTheSandbox(t *testing.T) {
	prlimit, err := exec.LookPath("prlimit")
	if err != nil {
		t.Skip("prlimit (util-linux) is not installed: cannot lower the CLI's RLIMIT_NOFILE")
	}
	e := newEnv(t)
	e.config("/bin/sh", "-c", "echo started")
	cmd := e.moat.Command("run", "--bundle", e.bundle, "lowfd")
	cmd.Args = append([]string{prlimit, fmt.Sprintf("--nofile=%d", confine.TableFD/4), "--", cmd.Path}, cmd.Args[1:]...)
	cmd.Path = prlimit
	out, err := cmd.CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "started" {
		t.Fatalf("moat run under RLIMIT_NOFILE %d: %v, output %q", confine.TableFD/4, err, out)
	}
}
