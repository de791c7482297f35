package conformance

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"syscall"
)

// gccFlags are the flags every program is built with: static so that the
// binary needs nothing from the rootfs, warnings as errors so that a sloppy
// program cannot pass by accident.
var gccFlags = []string{"-static", "-O1", "-Wall", "-Werror"}

// build compiles every program into dir (sources under dir/src, binaries
// directly in dir), several at a time. gcc's own temporary files go to
// tmpDir, so that the caller removes whatever an interrupted gcc leaves.
func build(ctx context.Context, dir, tmpDir string, progs []Program) error {
	gcc, err := exec.LookPath("gcc")
	if err != nil {
		return fmt.Errorf("building the conformance programs needs gcc: %w", err)
	}
	src := filepath.Join(dir, "src")
	if err := os.MkdirAll(src, 0o755); err != nil {
		return err
	}
	if err := os.MkdirAll(tmpDir, 0o700); err != nil {
		return err
	}
	header, err := programFiles.ReadFile("programs/" + checkHeader)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(src, checkHeader), header, 0o644); err != nil {
		return err
	}

	errs := make([]error, len(progs))
	sem := make(chan struct{}, runtime.NumCPU())
	var wg sync.WaitGroup
	for i, p := range progs {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			errs[i] = compile(ctx, gcc, src, tmpDir, filepath.Join(dir, p.binaryName()), p)
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

func compile(ctx context.Context, gcc, srcDir, tmpDir, out string, p Program) error {
	if err := os.WriteFile(filepath.Join(srcDir, p.File), p.source, 0o644); err != nil {
		return err
	}
	// Compiling in the source directory makes __FILE__, and so every
	// failure line, start with the bare file name.
	args := append(append([]string{}, gccFlags...), "-o", out, p.File)
	cmd := exec.CommandContext(ctx, gcc, args...)
	cmd.Dir = srcDir
	cmd.Env = append(os.Environ(), "TMPDIR="+tmpDir)
	// On cancellation kill the compiler passes too, not only the driver:
	// they would go on writing into tmpDir while it is being removed.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	var msg bytes.Buffer
	cmd.Stdout = &msg
	cmd.Stderr = &msg
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("gcc %s: %v\n%s", p.File, err, msg.Bytes())
	}
	return nil
}
