// Package rootfs builds the root file systems that tests run real programs
// in: a Debian system made by debootstrap, built once per machine and
// cached, because a build takes minutes and downloads a hundred megabytes.
//
// A cached rootfs is shared by every test process and every container, so
// it must be mounted read-only: nothing may write into it after the build.
package rootfs

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// debianSuite is the release the rootfs is made of: the one CI machines run,
// so that its packages come from the mirror they already use.
const debianSuite = "bookworm"

// debianPackages are what agents run, beyond the minimal base system (bash,
// coreutils, findutils, sed, grep, tar, dpkg). debootstrap does not resolve
// virtual packages: libboost-regex1.74.0 provides gdb's (through
// libsource-highlight4v5) libboost-regex1.74.0-icu72, and without it named
// the configuration of the base packages fails.
var debianPackages = []string{"python3", "python3-venv", "gcc", "libc6-dev", "make", "git", "sqlite3", "strace", "gdb",
	"libboost-regex1.74.0", "bubblewrap"}

// debootstrapArgs are the arguments that decide what the rootfs holds; the
// target directory and the mirror follow them.
func debootstrapArgs() []string {
	return []string{"--variant=minbase", "--include=" + strings.Join(debianPackages, ","), debianSuite}
}

// Debian returns the path of a Debian rootfs (bookworm, minbase, with
// debianPackages), building it under cacheDir when it
// is not there yet. Concurrent callers, in this process or others, wait for
// one build. Building needs root and the Debian mirror that apt uses; when
// the mirror cannot be reached the error wraps ErrMirrorUnreachable.
func Debian(ctx context.Context, cacheDir string) (string, error) {
	args := debootstrapArgs()
	sum := sha256.Sum256([]byte(strings.Join(args, "\x00")))
	// The key changes with the package list, so a changed list builds a new
	// rootfs instead of reusing one that lacks a package.
	key := "debian-" + debianSuite + "-" + hex.EncodeToString(sum[:6])
	if !isDir(filepath.Join(cacheDir, key)) && os.Geteuid() != 0 {
		return "", errors.New("building a Debian rootfs needs root: debootstrap makes devices and chroots")
	}
	return buildOnce(ctx, cacheDir, key, func(tmp, logPath string) error {
		if err := fenceFromGo(cacheDir); err != nil {
			return err
		}
		mirror, err := aptMirror(debianSuite)
		if err != nil {
			return err
		}
		if err := probeMirror(ctx, mirror, debianSuite); err != nil {
			return err
		}
		debootstrap, err := findDebootstrap(ctx)
		if err != nil {
			return err
		}
		return runDebootstrap(ctx, debootstrap, append(args, tmp, mirror), logPath)
	})
}

// buildOnce returns cacheDir/key, first building it with build when it is
// not there: under a lock, so that concurrent callers (in this process or
// others) wait for one build, into a temporary directory build fills
// (its log at logPath) and that a rename then publishes whole, world
// readable. A reader never sees the tree half-built, and a build that
// dies leaves only a temporary directory, which the next build removes.
func buildOnce(ctx context.Context, cacheDir, key string, build func(tmp, logPath string) error) (string, error) {
	dir := filepath.Join(cacheDir, key)
	if isDir(dir) {
		return dir, nil
	}
	if err := os.MkdirAll(cacheDir, 0o755); err != nil {
		return "", err
	}
	unlock, err := lockFile(ctx, dir+".lock")
	if err != nil {
		return "", err
	}
	defer unlock()
	// Another process may have built it while this one waited for the lock.
	if isDir(dir) {
		return dir, nil
	}
	if err := removeStale(cacheDir, key); err != nil {
		return "", err
	}
	tmp, err := os.MkdirTemp(cacheDir, tmpPrefix(key))
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp) // a no-op once renamed
	if err := build(tmp, dir+".log"); err != nil {
		return "", err
	}
	// MkdirTemp made it 0700; a root directory is world-readable.
	if err := os.Chmod(tmp, 0o755); err != nil {
		return "", err
	}
	if err := os.Rename(tmp, dir); err != nil {
		return "", err
	}
	return dir, nil
}

// fenceFromGo makes cacheDir a Go module of its own. The cache usually lies
// in the tree of the module under test (build/), and the rootfs holds Go
// sources (git's contrib/), which `go vet ./...` and `go test ./...` would
// otherwise take for packages of that module. Go skips nested modules.
// An existing go.mod is left alone: rewriting it would truncate it under a
// go command reading it.
func fenceFromGo(cacheDir string) error {
	f, err := os.OpenFile(filepath.Join(cacheDir, "go.mod"), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if errors.Is(err, fs.ErrExist) {
		return nil
	}
	if err == nil {
		_, err = f.WriteString("module rootfscache\n")
		err = errors.Join(err, f.Close())
	}
	if err != nil {
		return fmt.Errorf("fencing the rootfs cache off from Go: %w", err)
	}
	return nil
}

// tmpPrefix names the directories a build of key fills before the rename.
func tmpPrefix(key string) string { return "." + key + ".tmp-" }

// removeStale deletes what builds of key that died left behind. The caller
// holds the key's lock, so no build is filling them. They hold no mounts:
// debootstrap runs in a mount namespace of its own (see runDebootstrap).
func removeStale(cacheDir, key string) error {
	stale, err := filepath.Glob(filepath.Join(cacheDir, tmpPrefix(key)+"*"))
	if err != nil {
		return err
	}
	for _, d := range stale {
		if err := os.RemoveAll(d); err != nil {
			return fmt.Errorf("removing an unfinished build: %w", err)
		}
	}
	return nil
}

// runDebootstrap runs debootstrap with args, its output going to logPath.
// It runs in a private mount namespace: the /proc and /sys it mounts in the
// target vanish with it, even when it is killed half-way, and never show in
// the host's mount table. Cancelling ctx kills its whole process group
// (dpkg, wget), not debootstrap alone.
func runDebootstrap(ctx context.Context, debootstrap string, args []string, logPath string) error {
	log, err := os.Create(logPath)
	if err != nil {
		return err
	}
	defer log.Close()
	cmd := exec.CommandContext(ctx, "unshare", append([]string{"--mount", "--propagation", "private", debootstrap}, args...)...)
	cmd.Stdout, cmd.Stderr = log, log
	// The chroot's maintainer scripts need the sbin directories, and a
	// locale the fresh system has.
	cmd.Env = append(os.Environ(), "PATH=/usr/sbin:/usr/bin:/sbin:/bin", "LC_ALL=C", "DEBIAN_FRONTEND=noninteractive")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 10 * time.Second
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("debootstrap %s: %v (log: %s)\n%s", strings.Join(args, " "), err, logPath, tail(logPath, 15))
	}
	return nil
}

// tail returns the last n lines of a file, which is where debootstrap says
// what went wrong.
func tail(path string, n int) string {
	data, _ := os.ReadFile(path)
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

func isDir(path string) bool {
	info, err := os.Stat(path)
	return err == nil && info.IsDir()
}
