package ocirun

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"time"
)

// Stdio is where a process's standard streams go; a nil one is /dev/null.
// An *os.File is handed to the process itself; any other writer is fed
// through a pipe.
type Stdio struct {
	Stdin          io.Reader
	Stdout, Stderr io.Writer
}

// Limits bound a run.
type Limits struct {
	// Timeout, if not zero, ends the run when it passes.
	Timeout time.Duration
	// Stop asks the process to end when the timeout passes or the context
	// ends: for a container, the runtime's kill or delete. Nil: the
	// process group is killed at once.
	Stop func()
	// Grace is how long the process has after Stop to exit by itself.
	Grace time.Duration
}

// pipeDelay is how long Wait waits, once a process has exited, for its
// output pipes to close: a container's processes may hold them open after
// the runtime process is gone.
const pipeDelay = 3 * time.Second

// Exit is how a process ended.
type Exit struct {
	Code     int            // its exit status; -1 if a signal killed it or it never started
	Signal   syscall.Signal // the signal that killed it, 0 if none
	TimedOut bool           // Limits.Timeout passed and it was stopped
	// Forced: it had not exited Grace after Stop (or there was no Stop),
	// and was killed.
	Forced bool
	Took   time.Duration // from its start to its exit
	// StartErr says why it could not be started; the rest is then zero.
	StartErr error

	state   *os.ProcessState
	timeout time.Duration
}

// Err is nil when the process exited with status 0, else the reason it did
// not: "exit status 3", "signal: killed", "timed out after 2s" or why it
// could not be started.
func (x Exit) Err() error {
	switch {
	case x.StartErr != nil:
		return x.StartErr
	case x.TimedOut:
		return fmt.Errorf("timed out after %v", x.timeout)
	case !x.state.Success():
		return fmt.Errorf("%s", x.state)
	}
	return nil
}

// Run runs cmd with stdio, in a process group of its own so that a Ctrl-C
// at the terminal reaches the caller alone and the caller decides how the
// process ends, and returns how it ended. When lim.Timeout passes or ctx
// ends first, lim.Stop is called, and once the process has exited or
// lim.Grace has passed, whatever is left of its process group is killed:
// runtimes fork helpers (runc init, gofers) that must not outlive the run.
// Run returns only once the process has exited. It keeps the rest of
// cmd.SysProcAttr (a chroot, say).
func Run(ctx context.Context, cmd *exec.Cmd, stdio Stdio, lim Limits) Exit {
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdio.Stdin, stdio.Stdout, stdio.Stderr
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
	cmd.WaitDelay = pipeDelay
	closeInheritedOnExec()

	start := time.Now()
	if err := cmd.Start(); err != nil {
		return Exit{Code: -1, StartErr: err}
	}
	var exited time.Time
	done := make(chan struct{})
	go func() {
		cmd.Wait()
		exited = time.Now()
		close(done)
	}()
	var timeout <-chan time.Time
	if lim.Timeout > 0 {
		timer := time.NewTimer(lim.Timeout)
		defer timer.Stop()
		timeout = timer.C
	}

	x := Exit{timeout: lim.Timeout}
	select {
	case <-done:
	case <-timeout:
		x.TimedOut = true
		x.Forced = stop(cmd, done, lim)
	case <-ctx.Done():
		x.Forced = stop(cmd, done, lim)
	}
	x.Took = exited.Sub(start)
	x.state = cmd.ProcessState
	x.Code = x.state.ExitCode()
	if ws, ok := x.state.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		x.Signal = ws.Signal()
	}
	return x
}

// closeInheritedOnExec marks the descriptors beyond stdio that this
// process holds without close-on-exec (inherited ones: flock(1) passes its
// lock down) close-on-exec, so that a process Run starts gets its stdio
// and nothing else, as a conformance program that counts its descriptors
// requires. Go opens its own descriptors close-on-exec already, and
// exec.Cmd's ExtraFiles are passed on regardless.
func closeInheritedOnExec() {
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return
	}
	for _, e := range entries {
		if fd, err := strconv.Atoi(e.Name()); err == nil && fd > 2 {
			syscall.CloseOnExec(fd)
		}
	}
}

// stop ends a running cmd whose Wait closes done, and reports whether it
// had to be killed.
func stop(cmd *exec.Cmd, done <-chan struct{}, lim Limits) (forced bool) {
	forced = true
	if lim.Stop != nil {
		lim.Stop()
		grace := time.NewTimer(lim.Grace)
		defer grace.Stop()
		select {
		case <-done:
			forced = false
		case <-grace.C:
		}
	}
	syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	<-done
	return forced
}
