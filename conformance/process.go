package conformance

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"syscall"
	"time"
)

const (
	// outputLimit caps what is kept of a run's stdout and of its stderr,
	// so that a runaway program cannot exhaust the runner's memory.
	outputLimit = 64 << 10
	// killGrace is how long a process that was asked to stop (a runtime
	// told to kill its container) gets before its process group is
	// killed, and how long its output pipes may stay open after it exits.
	killGrace = 3 * time.Second
)

// Outcome is how one run of a program ended.
type Outcome struct {
	ExitCode   int     `json:"exit_code"`           // -1 if it did not exit normally
	Signal     string  `json:"signal,omitempty"`    // the signal that killed it
	TimedOut   bool    `json:"timed_out,omitempty"` // killed by the runner's timeout
	Error      string  `json:"error,omitempty"`     // it could not be started
	DurationMS float64 `json:"duration_ms"`
	Stdout     string  `json:"stdout,omitempty"`
	Stderr     string  `json:"stderr,omitempty"`
}

// ok reports whether the run exited with status 0.
func (o *Outcome) ok() bool {
	return o.Error == "" && !o.TimedOut && o.ExitCode == 0
}

// failure describes a failed run in one line: the program's first line of
// complaint if it printed one, else how it ended.
func (o *Outcome) failure(timeout time.Duration) string {
	switch {
	case o.Error != "":
		return "could not start: " + o.Error
	case o.TimedOut:
		return fmt.Sprintf("timed out after %v", timeout)
	}
	for _, out := range []string{o.Stderr, o.Stdout} {
		if line := firstLine(out); line != "" {
			return line
		}
	}
	if o.Signal != "" {
		return "killed by signal: " + o.Signal
	}
	// Runtimes report a container killed by signal N as status 128+N.
	if n := o.ExitCode - 128; n > 0 && n < 65 {
		return fmt.Sprintf("exit status %d (signal: %v?)", o.ExitCode, syscall.Signal(n))
	}
	return fmt.Sprintf("exit status %d", o.ExitCode)
}

func firstLine(s string) string {
	for _, line := range strings.Split(s, "\n") {
		if line = strings.TrimSpace(line); line != "" {
			return line
		}
	}
	return ""
}

// runProcess runs cmd in a process group of its own, so that a Ctrl-C at
// the terminal reaches the runner alone and the runner decides how the
// child ends. When the timeout passes or ctx is cancelled, stop is called
// to ask the process to end (nil: no asking); whatever still runs
// killGrace later is killed with its whole process group.
func runProcess(ctx context.Context, cmd *exec.Cmd, timeout time.Duration, stop func()) Outcome {
	stdout := &limitedBuffer{limit: outputLimit}
	stderr := &limitedBuffer{limit: outputLimit}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	// A container's processes may hold the output pipes open after the
	// runtime process itself is gone.
	cmd.WaitDelay = killGrace

	start := time.Now()
	if err := cmd.Start(); err != nil {
		return Outcome{ExitCode: -1, Error: err.Error()}
	}
	done := make(chan struct{})
	go func() {
		cmd.Wait()
		close(done)
	}()
	timer := time.NewTimer(timeout)
	defer timer.Stop()

	var o Outcome
	select {
	case <-done:
	case <-timer.C:
		o.TimedOut = true
		stopProcess(cmd, done, stop)
	case <-ctx.Done():
		stopProcess(cmd, done, stop)
	}
	o.DurationMS = float64(time.Since(start).Microseconds()) / 1000
	o.Stdout, o.Stderr = stdout.String(), stderr.String()
	o.ExitCode = cmd.ProcessState.ExitCode()
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		o.Signal = ws.Signal().String()
	}
	return o
}

// stopProcess ends a running cmd whose Wait closes done.
func stopProcess(cmd *exec.Cmd, done <-chan struct{}, stop func()) {
	if stop != nil {
		stop()
		select {
		case <-done:
			return
		case <-time.After(killGrace):
		}
	}
	syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	<-done
}

// limitedBuffer keeps the first limit bytes written to it and drops the
// rest, without failing the writer. exec.Cmd copies each stream from one
// goroutine and String is called after Wait, so it needs no lock.
type limitedBuffer struct {
	buf   []byte
	limit int
}

func (b *limitedBuffer) Write(p []byte) (int, error) {
	if room := b.limit - len(b.buf); room > 0 {
		b.buf = append(b.buf, p[:min(room, len(p))]...)
	}
	return len(p), nil
}

func (b *limitedBuffer) String() string {
	return string(b.buf)
}
