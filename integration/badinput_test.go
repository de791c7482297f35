package integration

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestBadProcessConfig: problems only the sentry can see (it resolves the
// program through the gofer) still give one line, exit 1 and nothing left.
// The bundle checks the CLI makes alone are tested in cmd/moat.
func TestBadProcessConfig(t *testing.T) {
	cases := []struct {
		name string
		args []string
		cwd  string
		want string
	}{
		{"not in PATH", []string{"no-such-program"}, "/", `exec: "no-such-program": executable file not found in $PATH`},
		{"bad path", []string{"/bin/no-such-program"}, "/", `"/bin/no-such-program": no such file or directory`},
		{"not executable", []string{"/etc/passwd"}, "/", `"/etc/passwd": permission denied`},
		{"missing cwd", []string{"true"}, "/no/such/dir", `cwd ("/no/such/dir")`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t)
			e.config(c.args...)
			if c.cwd != "/" {
				e.setCwd(c.cwd)
			}
			for _, cmd := range []string{"create", "run"} {
				_, errOut, code := e.moatCmd(cmd, "--bundle", e.bundle, "bad")
				if code != 1 || !strings.Contains(errOut, c.want) || strings.Count(strings.TrimSpace(errOut), "\n") != 0 {
					t.Errorf("%s: exit %d, stderr %q; want exit 1 and one line with %q", cmd, code, errOut, c.want)
				}
			}
		})
	}
}

// TestGuestFaultExitStatus: a guest that dies of SIGSEGV makes `moat run`
// exit 139, as a shell reports it.
func TestGuestFaultExitStatus(t *testing.T) {
	e := newEnv(t)
	e.buildProgram("crash", `int main(void) { *(volatile int *)16 = 1; return 0; }`)
	e.config("/bin/crash")
	if _, errOut, code := e.moatCmd("run", "--bundle", e.bundle, "crash1"); code != 139 {
		t.Fatalf("exit %d, want 139 (%s)", code, errOut)
	}
}

// TestUnsupportedSyscallLogged: a call moat does not implement answers
// ENOSYS to the guest and is named in the log, once. (tuxcall: Linux never
// implemented it either, so it stays unsupported.)
func TestUnsupportedSyscallLogged(t *testing.T) {
	e := newEnv(t)
	e.buildProgram("tuxcall", `#include <errno.h>
#include <unistd.h>
#include <sys/syscall.h>
int main(void) {
	for (int i = 0; i < 3; i++)
		if (syscall(SYS_tuxcall, 0) != -1 || errno != ENOSYS)
			return 1;
	return 0;
}`)
	e.config("/bin/tuxcall")
	if _, errOut, code := e.moatCmd("run", "--bundle", e.bundle, "tuxcall1"); code != 0 {
		t.Fatalf("guest saw something other than ENOSYS: exit %d (%s)", code, errOut)
	}
	log, err := os.ReadFile(e.log)
	must(t, err)
	if n := strings.Count(string(log), "unsupported syscall tuxcall"); n != 1 {
		t.Fatalf("log names tuxcall %d times, want once:\n%s", n, log)
	}
}

// buildProgram compiles a static C program into the bundle's /bin.
func (e *env) buildProgram(name, src string) {
	e.t.Helper()
	if _, err := exec.LookPath("gcc"); err != nil {
		e.t.Skip("gcc is not installed (make test installs it): cannot build the guest program")
	}
	dir := e.t.TempDir()
	c := filepath.Join(dir, name+".c")
	must(e.t, os.WriteFile(c, []byte(src), 0o644))
	out := filepath.Join(e.bundle, "rootfs/bin", name)
	if b, err := exec.Command("gcc", "-static", "-O1", "-o", out, c).CombinedOutput(); err != nil {
		e.t.Fatalf("gcc: %v\n%s", err, b)
	}
}
