package engines

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// startContainerd starts a containerd of the test's own (root, state and
// socket in dir) and stops it when the test ends; it returns the socket.
func startContainerd(t *testing.T, dir string) string {
	t.Helper()
	sock := filepath.Join(dir, "containerd.sock")
	data := fmt.Sprintf("version = 2\nroot = %q\nstate = %q\n[grpc]\n  address = %q\n",
		filepath.Join(dir, "root"), filepath.Join(dir, "state"), sock)
	startContainerdWith(t, dir, data)
	return sock
}

// startContainerdWith starts containerd with the configuration data,
// which puts its socket at dir/containerd.sock, and returns what stops
// it (also done when the test ends).
func startContainerdWith(t *testing.T, dir, data string) (stop func()) {
	t.Helper()
	sock := filepath.Join(dir, "containerd.sock")
	config := filepath.Join(dir, "config.toml")
	if err := os.WriteFile(config, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	log, err := os.Create(filepath.Join(dir, "containerd.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("containerd", "--config", config)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cmd.Process.Signal(syscall.SIGTERM)
			done := make(chan struct{})
			go func() { cmd.Wait(); close(done) }()
			select {
			case <-done:
			case <-time.After(20 * time.Second):
				syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
				<-done
			}
			log.Close()
		})
	}
	t.Cleanup(stop)
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		if exec.Command("ctr", "-a", sock, "version").Run() == nil {
			return stop
		}
		if time.Now().After(deadline) {
			data, _ := os.ReadFile(filepath.Join(dir, "containerd.log"))
			t.Fatalf("containerd did not answer within 30s:\n%s", data)
		}
	}
}

// TestContainerd drives the stock runc shim (io.containerd.runc.v2) with
// its runc binary set to each runtime, as a RuntimeClass's BinaryName
// option sets it, through ctr on an unpacked root file system.
func TestContainerd(t *testing.T) {
	needPackages(t, "containerd", "containerd")
	tarball := busyboxTar(t)
	dir := t.TempDir()
	rootfs := filepath.Join(dir, "rootfs")
	os.Mkdir(rootfs, 0o755)
	if out, err := exec.Command("tar", "-C", rootfs, "-xf", tarball).CombinedOutput(); err != nil {
		t.Fatalf("untar: %v: %s", err, out)
	}
	sock := startContainerd(t, dir)
	ctr := func(t *testing.T, args ...string) result {
		t.Helper()
		return run(t, "ctr", append([]string{"-a", sock}, args...)...)
	}
	// The same tree as an image, made here and imported: containerd
	// unpacks it into a snapshot and the process gets the image's
	// environment, as for an image pulled from a registry.
	if r := ctr(t, "images", "import", ociImageTar(t, rootfs, image, nil)); r.code != 0 {
		t.Fatalf("ctr images import: %s", r.stderr)
	}
	// ctrRun is `ctr run ID ARGS` on the root file system with rt as the
	// shim's runc.
	ctrRun := func(t *testing.T, rt runtimeUnderTest, id string, args ...string) []string {
		return append([]string{"run", "--env", "PATH=/bin", "--runtime", "io.containerd.runc.v2",
			"--runc-binary", rt.path, "--rootfs", rootfs, id}, args...)
	}
	status := func(t *testing.T, id string) string {
		for _, line := range strings.Split(ctr(t, "tasks", "ls").stdout, "\n") {
			if f := strings.Fields(line); len(f) == 3 && f[0] == id {
				return f[2]
			}
		}
		return "none"
	}
	cases := []struct {
		name string
		run  func(t *testing.T, rt runtimeUnderTest) string
		want string
	}{
		{"run", func(t *testing.T, rt runtimeUnderTest) string {
			r := ctr(t, append([]string{"run", "--rm"}, ctrRun(t, rt, "run-"+rt.name, "sh", "-c", "echo hello; exit 5")[1:]...)...)
			return r.stdout + itoa(r.code)
		}, "hello\n5"},
		{"run an imported image", func(t *testing.T, rt runtimeUnderTest) string {
			r := ctr(t, "run", "--rm", "--runtime", "io.containerd.runc.v2", "--runc-binary", rt.path,
				image, "img-"+rt.name, "sh", "-c", "echo $PATH; ls /bin/busybox")
			return r.stdout + itoa(r.code)
		}, "/bin\n/bin/busybox\n0"},
		{"detached life", func(t *testing.T, rt runtimeUnderTest) string {
			id := "d-" + rt.name
			if r := ctr(t, append([]string{"run", "-d"}, ctrRun(t, rt, id, "sleep", "1000")[1:]...)...); r.code != 0 {
				t.Fatalf("ctr run -d: %s", r.stderr)
			}
			defer func() {
				ctr(t, "tasks", "kill", "-s", "KILL", id)
				waitFor(t, func() bool { return status(t, id) == "STOPPED" })
				ctr(t, "tasks", "rm", id)
				ctr(t, "containers", "rm", id)
			}()
			var out []string
			r := ctr(t, "tasks", "exec", "--exec-id", "e1", id, "sh", "-c", "echo in; exit 3")
			out = append(out, r.stdout+itoa(r.code))
			// tasks ps lists the pids `RUNTIME ps --format json` gives:
			// one for the guest's one process.
			out = append(out, itoa(len(strings.Split(strings.TrimSpace(ctr(t, "tasks", "ps", id).stdout), "\n"))-1))
			ctr(t, "tasks", "pause", id)
			out = append(out, status(t, id))
			ctr(t, "tasks", "resume", id)
			out = append(out, status(t, id))
			return strings.Join(out, "|")
		}, "in\n3|1|PAUSED|RUNNING"},
	}
	rts := runtimes(t)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := map[string]string{}
			for _, rt := range rts {
				got[rt.name] = c.run(t, rt)
				if got[rt.name] != c.want {
					t.Errorf("%s: %q, want %q", rt.name, got[rt.name], c.want)
				}
			}
			if r, ok := got["runc"]; ok && r != got["moat"] {
				t.Errorf("moat gave %q, runc %q", got["moat"], r)
			}
		})
	}
}
