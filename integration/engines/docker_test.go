package engines

import (
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// dockerd is the Debian package's daemon; the docker command is the
// package's too (another on $PATH may be newer than the daemon).
const (
	dockerd = "/usr/sbin/dockerd"
	docker  = "/usr/bin/docker"
)

// startDockerd starts a daemon of the test's own (its data, state and
// socket in dir, no bridge or iptables: the host's network is left
// alone) whose default runtime is rt, with moat added as a runtime as a
// user would (--add-runtime), and stops it when the test ends. It
// returns the socket's address.
func startDockerd(t *testing.T, dir string, rt runtimeUnderTest, moat string) string {
	t.Helper()
	sock := "unix://" + filepath.Join(dir, "docker.sock")
	args := []string{"--data-root", filepath.Join(dir, "data"), "--exec-root", filepath.Join(dir, "exec"),
		"--pidfile", filepath.Join(dir, "docker.pid"), "-H", sock, "--iptables=false", "--ip6tables=false",
		"--bridge=none", "--add-runtime", "moat=" + moat}
	if rt.name == "moat" {
		args = append(args, "--default-runtime", "moat")
	}
	log, err := os.Create(filepath.Join(dir, "dockerd.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(dockerd, args...)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
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
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		if exec.Command(docker, "-H", sock, "version").Run() == nil {
			return sock
		}
		if time.Now().After(deadline) {
			data, _ := os.ReadFile(filepath.Join(dir, "dockerd.log"))
			t.Fatalf("dockerd did not answer within 30s:\n%s", data)
		}
	}
}

func TestDocker(t *testing.T) {
	needPackages(t, dockerd, "docker.io")
	tarball := busyboxTar(t)
	moat := moatBinary(t)
	socks := map[string]string{}
	for _, rt := range runtimes(t) {
		dir, err := os.MkdirTemp("", "moat-engines-docker-")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(dir) })
		socks[rt.name] = startDockerd(t, dir, rt, moat)
		if r := run(t, docker, "-H", socks[rt.name], "import", tarball, image); r.code != 0 {
			t.Fatalf("docker import: %s", r.stderr)
		}
	}
	runCases(t, func(rt runtimeUnderTest) client {
		return client{rt: rt, argv: []string{docker, "-H", socks[rt.name]}, extraRun: []string{"--network", "none"}}
	})
}
