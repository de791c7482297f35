package integration

import (
	"strings"
	"testing"

	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// TestNprocLimit: RLIMIT_NPROC from the config bounds the tasks of a
// non-root user, init included, as Linux counts them: a fork past the
// limit fails with EAGAIN, and a fork bomb stops there.
func TestNprocLimit(t *testing.T) {
	e := newEnv(t)
	e.buildProgram("forks", forkBomb)
	e.writeSpec(specs.Spec{
		Version: specs.Version,
		Process: &specs.Process{Args: []string{"/bin/forks"}, Env: []string{"PATH=/bin"}, Cwd: "/",
			User:    specs.User{UID: 1000, GID: 1000},
			Rlimits: []specs.POSIXRlimit{{Type: "RLIMIT_NPROC", Hard: 5, Soft: 5}}},
		Root:     &specs.Root{Path: "rootfs", Readonly: true},
		Hostname: "moat-integration",
	})
	out, errOut, code := e.moatCmd("run", "--bundle", e.bundle, "nproc1")
	if code != 0 {
		t.Fatalf("exit %d (%s)", code, errOut)
	}
	if want := "forked 4, then EAGAIN"; strings.TrimSpace(out) != want {
		t.Fatalf("guest printed %q, want %q", out, want)
	}
}

// forkBomb forks children that wait, up to 200, until a fork fails, then
// kills them and says how many it made and why it stopped.
const forkBomb = `#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <unistd.h>
int main(void) {
	pid_t kids[200];
	int n = 0, err = 0;
	while (n < 200) {
		pid_t p = fork();
		if (p == 0) { pause(); _exit(0); }
		if (p < 0) { err = errno; break; }
		kids[n++] = p;
	}
	for (int i = 0; i < n; i++)
		kill(kids[i], SIGKILL);
	printf("forked %d, then %s\n", n, err == EAGAIN ? "EAGAIN" : "something else");
	return 0;
}`
