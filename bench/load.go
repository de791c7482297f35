package bench

import (
	"errors"
	"fmt"
	"os/exec"
	"syscall"
)

// A sandbox host is loaded by definition: many sandboxes share its CPUs. A
// runtime whose system calls are fast only on an idle machine (a hand-off
// that spins while the CPU it needs is taken) looks good on a quiet bench
// and fails its users. So with Config.Load set, each workload marked Loaded
// is measured a second time beside that many busy processes, under every
// runtime, interleaved as the quiet runs are.

// busyLoop is one busy process: a shell loop that never makes a system call.
var busyLoop = []string{"/bin/sh", "-c", "while :; do :; done"}

// load is the busy processes of one loaded measurement.
type load struct {
	cmds []*exec.Cmd
}

// startLoad starts n busy processes. Each is in a session of its own: they
// stand for other tenants of the host, and the host's scheduler shares the
// CPUs between sessions (autogroups) and cgroups first, and only then
// between the threads of each; busy processes in moat-bench's session would
// compete thread by thread with every runtime that puts its container in no
// cgroup of its own. They die with moat-bench (the parent death signal), so
// a moat-bench killed before its clean-up leaves none spinning.
func startLoad(n int) (*load, error) {
	l := &load{}
	for i := 0; i < n; i++ {
		cmd := exec.Command(busyLoop[0], busyLoop[1:]...)
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setsid: true}
		if err := cmd.Start(); err != nil {
			return nil, errors.Join(fmt.Errorf("start busy process: %w", err), l.stop())
		}
		l.cmds = append(l.cmds, cmd)
	}
	return l, nil
}

// stop kills the busy processes and waits for them.
func (l *load) stop() error {
	var errs []error
	for _, cmd := range l.cmds {
		if err := cmd.Process.Kill(); err != nil {
			errs = append(errs, err)
		}
		cmd.Wait() // killed: the status says so, it is no error
	}
	l.cmds = nil
	return errors.Join(errs...)
}

// loaded is w as measured beside n busy processes: its own name, so that
// the reports keep the quiet and the loaded figure apart.
func (w Workload) loaded(n int) Workload {
	w.quiet, w.Name = w.Name, LoadedName(w.Name, n)
	w.What = fmt.Sprintf("%s, beside %d busy processes (a shell loop each) on the host's CPUs", w.What, n)
	return w
}

// LoadedName is the report's name of a workload measured beside n busy
// processes.
func LoadedName(name string, n int) string {
	return fmt.Sprintf("%s@load%d", name, n)
}

// resultName is the name w's program prints its result under.
func (w Workload) resultName() string {
	if w.quiet != "" {
		return w.quiet
	}
	return w.Name
}
