package state

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// Process names one host process in a way that survives pid reuse: a pid
// alone may, by the time a later command reads it, belong to an unrelated
// process, which must never be signalled or mistaken for the sandbox.
type Process struct {
	PID       int    `json:"pid"`
	StartTime uint64 `json:"startTime"` // field 22 of /proc/<pid>/stat: clock ticks after boot
}

// Identify records the process that has pid now.
func Identify(pid int) (Process, error) {
	st, err := readStat(pid)
	if err != nil {
		return Process{}, err
	}
	return Process{PID: pid, StartTime: st.startTime}, nil
}

// Alive reports whether p still runs: its pid exists, is not a zombie and
// started when p says it did.
func (p Process) Alive() bool {
	if p.PID <= 0 {
		return false
	}
	st, err := readStat(p.PID)
	return err == nil && st.startTime == p.StartTime && st.state != 'Z' && st.state != 'X'
}

// Kill sends SIGKILL to p if p is still the process it names; a process
// that is gone needs nothing.
func (p Process) Kill() error {
	fd, err := p.pidfd()
	if err != nil || fd < 0 {
		return err
	}
	defer unix.Close(fd)
	if err := unix.PidfdSendSignal(fd, unix.SIGKILL, nil, 0); err != nil && !errors.Is(err, unix.ESRCH) {
		return fmt.Errorf("kill pid %d: %w", p.PID, err)
	}
	return nil
}

// WaitGone waits up to timeout for p to exit. A zombie counts as gone: its
// parent, not the caller, reaps it.
func (p Process) WaitGone(timeout time.Duration) error {
	fd, err := p.pidfd()
	if err != nil || fd < 0 {
		return err
	}
	defer unix.Close(fd)
	deadline := time.Now().Add(timeout)
	for {
		// A pidfd polls readable once its process has exited.
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		wait := max(time.Until(deadline).Milliseconds(), 0)
		n, err := unix.Poll(fds, int(wait))
		switch {
		case errors.Is(err, unix.EINTR):
			continue
		case err != nil:
			return fmt.Errorf("wait for pid %d: %w", p.PID, err)
		case n > 0:
			return nil
		case wait == 0:
			return fmt.Errorf("pid %d still runs %s after it was told to exit", p.PID, timeout)
		}
	}
}

// pidfd opens a pidfd on p, or returns -1 if p no longer exists. Checking
// the start time after the open closes the race with pid reuse: whatever
// the pidfd refers to can no longer change.
func (p Process) pidfd() (int, error) {
	if p.PID <= 0 {
		return -1, nil
	}
	fd, err := unix.PidfdOpen(p.PID, 0)
	if errors.Is(err, unix.ESRCH) {
		return -1, nil
	}
	if err != nil {
		return -1, fmt.Errorf("pidfd_open %d: %w", p.PID, err)
	}
	st, err := readStat(p.PID)
	if err != nil || st.startTime != p.StartTime {
		unix.Close(fd)
		return -1, nil
	}
	return fd, nil
}

// procStat holds the fields of /proc/<pid>/stat that moat reads.
type procStat struct {
	state     byte
	startTime uint64
}

func readStat(pid int) (procStat, error) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return procStat{}, err
	}
	// The command name (field 2) is in parentheses and may itself hold
	// spaces and parentheses; the fields after the last ')' are plain.
	text := string(data)
	end := strings.LastIndexByte(text, ')')
	if end < 0 {
		return procStat{}, fmt.Errorf("/proc/%d/stat: no command name", pid)
	}
	fields := strings.Fields(text[end+1:])
	// fields[0] is field 3 (state), so field 22 (starttime) is fields[19].
	if len(fields) < 20 || len(fields[0]) != 1 {
		return procStat{}, fmt.Errorf("/proc/%d/stat: too few fields", pid)
	}
	start, err := strconv.ParseUint(fields[19], 10, 64)
	if err != nil {
		return procStat{}, fmt.Errorf("/proc/%d/stat: start time %q: %w", pid, fields[19], err)
	}
	return procStat{state: fields[0][0], startTime: start}, nil
}
