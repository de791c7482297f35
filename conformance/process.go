package conformance

import (
	"fmt"
	"strings"
	"syscall"
	"time"

	"github.com/moat-sandbox/moat/internal/ocirun"
)

const (
	// outputLimit caps what is kept of a run's stdout and of its stderr,
	// so that a runaway program cannot exhaust the runner's memory.
	outputLimit = 64 << 10
	// killGrace is how long a runtime told to kill its container gets
	// before its process group is killed.
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

// runCaptured runs a process through run, which gives it stdio, keeping up
// to outputLimit of its stdout and of its stderr, and says how it ended.
func runCaptured(run func(ocirun.Stdio) ocirun.Exit) Outcome {
	stdout := &limitedBuffer{limit: outputLimit}
	stderr := &limitedBuffer{limit: outputLimit}
	x := run(ocirun.Stdio{Stdout: stdout, Stderr: stderr})
	if x.StartErr != nil {
		return Outcome{ExitCode: -1, Error: x.StartErr.Error()}
	}
	o := Outcome{
		ExitCode:   x.Code,
		TimedOut:   x.TimedOut,
		DurationMS: float64(x.Took.Microseconds()) / 1000,
		Stdout:     stdout.String(),
		Stderr:     stderr.String(),
	}
	if x.Signal != 0 {
		o.Signal = x.Signal.String()
	}
	return o
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
