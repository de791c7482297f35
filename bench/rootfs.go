package bench

import (
	"context"
	"debug/elf"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// buildRootfs fills the empty directory dir with the system the workloads run
// on: a copy of base when it is given, else busybox and its applets.
func buildRootfs(ctx context.Context, dir, busybox, base string) error {
	if base != "" {
		// A copy, not the directory itself: the built programs must be added
		// to it, and native runs chroot into it, without touching the
		// caller's tree.
		out, err := exec.CommandContext(ctx, "cp", "-a", filepath.Clean(base)+"/.", dir).CombinedOutput()
		if err != nil {
			return fmt.Errorf("copying rootfs %s: %v: %s", base, err, strings.TrimSpace(string(out)))
		}
		return os.MkdirAll(filepath.Join(dir, "bench"), 0o755)
	}
	if err := checkStatic(busybox); err != nil {
		return err
	}
	// The mount points of bundle.go, and /bench for the programs.
	for _, d := range []string{"bin", "bench", "dev", "proc", "sys", "tmp", "etc", "root"} {
		if err := os.Mkdir(filepath.Join(dir, d), 0o755); err != nil {
			return err
		}
	}
	if err := copyFile(busybox, filepath.Join(dir, "bin/busybox"), 0o755); err != nil {
		return err
	}
	list, err := exec.CommandContext(ctx, busybox, "--list").Output()
	if err != nil {
		return fmt.Errorf("%s --list: %v", busybox, err)
	}
	for _, applet := range strings.Fields(string(list)) {
		if applet == "busybox" {
			continue
		}
		if err := os.Symlink("busybox", filepath.Join(dir, "bin", applet)); err != nil {
			return err
		}
	}
	return nil
}

// checkStatic refuses a dynamically linked busybox: the rootfs holds no
// shared libraries, so it would fail inside every container with a message
// far from the cause.
func checkStatic(path string) error {
	f, err := elf.Open(path)
	if err != nil {
		return fmt.Errorf("busybox %s: %w", path, err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return fmt.Errorf("busybox %s is dynamically linked; the rootfs needs a static one (Debian: busybox-static)", path)
		}
	}
	return nil
}

func copyFile(from, to string, mode os.FileMode) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
