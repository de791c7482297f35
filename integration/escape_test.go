package integration

import (
	"bytes"
	"crypto/sha256"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/moat-sandbox/moat/internal/ocirun"
)

// escapeCases parses escape's "case: result" lines.
func escapeCases(out string) map[string][]string {
	m := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if name, res, ok := strings.Cut(line, ": "); ok {
			m[name] = append(m[name], res)
		}
	}
	return m
}

// deniedCalls are escape's cases whose call moat must refuse a container
// without capabilities. Under runc (no seccomp profile) some go through to
// the host kernel: the test logs which. escape's keyctl and
// process_vm_writev cases are not among them: moat answers those calls
// from the sandbox's own keys and processes (syscalls/sys_keys.go,
// syscalls/sys_process_vm.go), and the sentry's own seccomp filter keeps
// it from making either on the host (internal/confine's tests).
var deniedCalls = []string{"mount", "umount2", "pivot_root", "unshare mount", "setns", "bpf",
	"perf_event_open", "userfaultfd", "io_uring_setup", "kexec_load", "init_module", "reboot",
	"open_by_handle_at", "iopl", "ioperm", "ptrace attach", "write /proc/self/exe"}

// TestEscapeAttemptsFailInMoatAsInRunc runs testdata/escape.c, a container
// that tries the ways out of the escape suite (the runtime's
// binary through /proc/self/exe, a leaked descriptor, a host file beside
// the rootfs by `..`, /proc/self/root and symlinks, system calls from a
// JIT page, and the calls that reach the kernel's guts), in moat and in
// runc: the path and descriptor cases must hold in both, moat must refuse
// every call (runc's answers show which the host kernel takes), and
// afterwards the moat binary and the host file are as they were.
func TestEscapeAttemptsFailInMoatAsInRunc(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("not root: runc and moat need root to run a sandbox")
	}
	runc, err := ocirun.LookPath("runc")
	if err != nil {
		t.Skipf("runc: %v", err)
	}
	e := newEnv(t)
	must(t, os.MkdirAll(filepath.Join(e.bundle, "rootfs/proc"), 0o755))
	e.buildTestdata("escape")
	const secret = "host-secret"
	secretPath := filepath.Join(e.bundle, secret)
	must(t, os.WriteFile(secretPath, []byte("the host's\n"), 0o600))
	spec := ocirun.Spec([]string{"/bin/escape", secret}, []string{"PATH=/bin"}, "moat-escape")
	spec.Mounts = []specs.Mount{ocirun.Proc(), ocirun.Tmpfs("/tmp", "nosuid", "size=1m")}
	e.writeSpec(*spec)
	bin := moatBinary(t)
	before := fileSum(t, bin)

	moatOut, errOut, code := e.moatCmd("run", "--bundle", e.bundle, "escape")
	if code != 0 {
		t.Fatalf("moat: exit %d, stdout:\n%s\nstderr: %s", code, moatOut, errOut)
	}
	cmd := exec.Command(runc, "--root", t.TempDir(), "run", "--bundle", e.bundle, "moat-escape-runc")
	var runcErr bytes.Buffer
	cmd.Stderr = &runcErr
	runcOut, err := cmd.Output()
	if err != nil {
		t.Fatalf("runc: %v, stdout:\n%s\nstderr: %s", err, runcOut, runcErr.String())
	}
	inMoat, inRunc := escapeCases(moatOut), escapeCases(string(runcOut))
	for _, name := range []string{"leaked descriptors", "host file", "chdir ..", "syscall from a JIT page"} {
		for rt, cases := range map[string]map[string][]string{"moat": inMoat, "runc": inRunc} {
			if got := strings.Join(cases[name], "; "); got != "held" {
				t.Errorf("%s: %s: %s", rt, name, got)
			}
		}
	}
	for _, name := range deniedCalls {
		m, r := strings.Join(inMoat[name], "; "), strings.Join(inRunc[name], "; ")
		if m == "" || m == "ok" {
			t.Errorf("%s: moat %q, want refused (runc: %q)", name, m, r)
		} else if m != r {
			t.Logf("%s: moat %s, runc %s", name, m, r)
		}
	}
	if after := fileSum(t, bin); after != before {
		t.Errorf("the moat binary changed while the escape ran")
	}
	if b, err := os.ReadFile(secretPath); err != nil || string(b) != "the host's\n" {
		t.Errorf("the host file: %q, %v", b, err)
	}
}

func fileSum(t *testing.T, path string) [sha256.Size]byte {
	t.Helper()
	b, err := os.ReadFile(path)
	must(t, err)
	return sha256.Sum256(b)
}
