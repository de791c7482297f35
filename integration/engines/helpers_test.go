package engines

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/moat-sandbox/moat/internal/ocirun"
)

// commandTimeout bounds one engine command: a hang fails the case, not
// the suite.
const commandTimeout = 90 * time.Second

// moatBinary is the moat under test.
var moatBinary = ocirun.MoatBinary

var (
	installMu  sync.Mutex
	installed  = map[string]error{}
	aptUpdated bool
)

// needPackages installs Debian packages the first time a test needs them,
// as `make deps` does, or skips the test saying why it could not.
func needPackages(t *testing.T, binary string, pkgs ...string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: engines run containers as root")
	}
	installMu.Lock()
	defer installMu.Unlock()
	key := strings.Join(pkgs, " ")
	err, done := installed[key]
	if !done {
		if _, lookErr := exec.LookPath(binary); lookErr != nil {
			err = aptInstall(pkgs)
		}
		installed[key] = err
	}
	if err != nil {
		t.Skipf("%s is not installed and could not be: %v", binary, err)
	}
}

func aptInstall(pkgs []string) error {
	install := func() error {
		cmd := exec.Command("apt-get", append([]string{"install", "-y", "-q"}, pkgs...)...)
		cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
		out, err := cmd.CombinedOutput()
		if err != nil {
			return fmt.Errorf("apt-get install %s: %v: %s", strings.Join(pkgs, " "), err, lastLine(out))
		}
		return nil
	}
	if err := install(); err == nil || aptUpdated {
		return err
	}
	aptUpdated = true
	if out, err := exec.Command("apt-get", "update", "-q").CombinedOutput(); err != nil {
		return fmt.Errorf("apt-get update: %v: %s", err, lastLine(out))
	}
	return install()
}

func lastLine(b []byte) string {
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return lines[len(lines)-1]
}

// result is what one command did.
type result struct {
	stdout, stderr string
	code           int
}

// run runs name with args under commandTimeout, stdin empty. Its output
// goes to files, not pipes: a detached container keeps the stdio it was
// given, and a pipe would not end with the command.
func run(t *testing.T, name string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), commandTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	out, errf := outputFile(t), outputFile(t)
	defer out.Close()
	defer errf.Close()
	cmd.Stdout, cmd.Stderr = out, errf
	err := cmd.Run()
	stdout, _ := os.ReadFile(out.Name())
	stderr, _ := os.ReadFile(errf.Name())
	r := result{stdout: string(stdout), stderr: string(stderr)}
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		r.code = exit.ExitCode()
	case err != nil:
		t.Fatalf("%s %q: %v", name, args, err)
	}
	if ctx.Err() != nil {
		t.Fatalf("%s %q did not finish within %v; stderr %q", name, args, commandTimeout, r.stderr)
	}
	return r
}

func outputFile(t *testing.T) *os.File {
	t.Helper()
	f, err := os.CreateTemp(t.TempDir(), "out")
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// busyboxRootfs is a directory holding Debian's static busybox with the
// applets the cases use, for an engine to import as an image.
func busyboxTar(t *testing.T) string {
	t.Helper()
	const busybox = "/bin/busybox"
	needPackages(t, busybox, "busybox-static")
	dir := t.TempDir()
	root := filepath.Join(dir, "rootfs")
	for _, d := range []string{"bin", "etc", "tmp", "proc", "sys", "dev"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	data, err := os.ReadFile(busybox)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "bin/busybox"), data, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, a := range []string{"sh", "sleep", "cat", "echo", "true", "id", "ls", "ps", "touch", "tty", "stty", "mount", "grep", "head", "env", "ip", "wget"} {
		if err := os.Symlink("busybox", filepath.Join(root, "bin", a)); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(filepath.Join(root, "etc/passwd"), []byte("root:x:0:0:root:/:/bin/sh\nnobody:x:65534:65534:nobody:/:/bin/sh\n"), 0o644)
	os.WriteFile(filepath.Join(root, "etc/group"), []byte("root:x:0:\nnogroup:x:65534:\n"), 0o644)
	tarball := filepath.Join(dir, "rootfs.tar")
	if out, err := exec.Command("tar", "-C", root, "-cf", tarball, ".").CombinedOutput(); err != nil {
		t.Fatalf("tar: %v: %s", err, out)
	}
	return tarball
}

// runtimes are the OCI runtimes each case runs under: runc, the
// reference, and moat.
func runtimes(t *testing.T) []runtimeUnderTest {
	t.Helper()
	rts := []runtimeUnderTest{{"moat", moatBinary(t)}}
	if p, err := exec.LookPath("runc"); err == nil {
		rts = append([]runtimeUnderTest{{"runc", p}}, rts...)
	}
	return rts
}

type runtimeUnderTest struct {
	name, path string
}

func itoa(n int) string { return fmt.Sprint(n) }

func boolStr(b bool) string { return fmt.Sprint(b) }

// waitFor polls cond for up to 30 s.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); !cond(); time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached within 30s")
		}
	}
}
