package rootfs

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// DebianWith returns the path of a copy of the Debian rootfs (Debian) into
// which apt-get, run in a chroot, has installed pkgs, building it under
// cacheDir when it is not there yet. It is for suites too large for every
// test run to carry (CPython's regression tests), so the base rootfs, which
// all integration tests share, does not grow with them. Like Debian it
// needs root and apt's mirror the first time, and concurrent callers wait
// for one build.
func DebianWith(ctx context.Context, cacheDir string, pkgs ...string) (string, error) {
	base, err := Debian(ctx, cacheDir)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256([]byte(strings.Join(pkgs, "\x00")))
	// The key names the base's, so a new base builds a new copy too.
	key := filepath.Base(base) + "-with-" + hex.EncodeToString(sum[:6])
	return buildOnce(ctx, cacheDir, key, func(tmp, logPath string) error {
		// cp -a keeps owners, modes, links and device nodes, as the
		// packages' files need; tmp exists, so its contents go in, not
		// base itself.
		if err := runLogged(ctx, logPath, "cp", "-a", "--reflink=auto", base+"/.", tmp); err != nil {
			return err
		}
		// The base's package lists are those of its build, which the
		// mirror still serves within one point release; apt-get update
		// would fetch them again for nothing.
		install := append([]string{"--mount", "--propagation", "private", "chroot", tmp,
			"apt-get", "install", "-y", "-q", "--no-install-recommends"}, pkgs...)
		if err := runLogged(ctx, logPath, "unshare", install...); err != nil {
			return err
		}
		return runLogged(ctx, logPath, "chroot", tmp, "apt-get", "clean")
	})
}

// runLogged runs a build step, its output appended to logPath, in a process
// group that cancelling ctx kills whole.
func runLogged(ctx context.Context, logPath, name string, args ...string) error {
	log, err := os.OpenFile(logPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer log.Close()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.Env = append(os.Environ(), "PATH=/usr/sbin:/usr/bin:/sbin:/bin", "LC_ALL=C", "DEBIAN_FRONTEND=noninteractive")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 10 * time.Second
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s %s: %v (log: %s)\n%s", name, strings.Join(args, " "), err, logPath, tail(logPath, 15))
	}
	return nil
}
