package kernel_test

import (
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/platform/fake"
	"github.com/moat-sandbox/moat/sentry/kernel"
)

func TestACreatedProcessRunsNothingUntilRun(t *testing.T) {
	s := newSandbox(t)
	var ran atomic.Bool
	s.AddProgram("/bin/probe", func(g *fake.Guest) {
		ran.Store(true)
		exitGroup(g, 4)
	})
	release := startInitHeld(t, s)
	p, err := s.Kernel.CreateProcess(execSpec("/bin/probe"))
	if err != nil {
		t.Fatal(err)
	}
	if s.Kernel.ThreadGroupByPID(p.PID()) == nil {
		t.Errorf("the created process %d is not in the tree", p.PID())
	}
	select {
	case <-p.Done():
		t.Fatal("the process ended before Run")
	case <-time.After(20 * time.Millisecond):
	}
	if ran.Load() {
		t.Fatal("the process ran before Run")
	}
	p.Run()
	p.Run() // a second Run does nothing
	if st := waitProcess(t, p); st != (kernel.ExitStatus{Code: 4}) || !ran.Load() {
		t.Errorf("exit status %+v (ran %v), want code 4", st, ran.Load())
	}
	close(release)
	s.Wait()
}

func TestACreatedProcessKilledBeforeRunEndsWithoutRunning(t *testing.T) {
	s := newSandbox(t)
	var ran atomic.Bool
	s.AddProgram("/bin/probe", func(g *fake.Guest) { ran.Store(true) })
	release := startInitHeld(t, s)
	p, err := s.Kernel.CreateProcess(execSpec("/bin/probe"))
	if err != nil {
		t.Fatal(err)
	}
	p.Signal(int(unix.SIGKILL))
	p.Run()
	if st := waitProcess(t, p); st != (kernel.ExitStatus{Signo: int(unix.SIGKILL)}) || ran.Load() {
		t.Errorf("exit status %+v (ran %v), want SIGKILL before any guest code", st, ran.Load())
	}
	close(release)
	s.Wait()
}

// A container's init takes, from outside, only the signals it handles
// and SIGKILL, as a pid namespace's init does; its children belong to
// its container, and SignalContainer reaches them and no other process.
func TestAContainersProcessesShareItsNameAndItsSignals(t *testing.T) {
	s := newSandbox(t)
	var childPID atomic.Int64
	childUp, pidKnown := make(chan struct{}), make(chan struct{})
	s.AddProgram("/bin/ctr", func(g *fake.Guest) {
		childPID.Store(int64(fork(t, g, func(g *fake.Guest) {
			close(childUp)
			g.Call(unix.SYS_PAUSE)
		})))
		close(pidKnown) // the child may run before fork returns here
		for {
			g.Call(unix.SYS_PAUSE)
		}
	})
	s.AddProgram("/bin/other", func(g *fake.Guest) { g.Call(unix.SYS_PAUSE) })
	release := startInitHeld(t, s)
	spec := execSpec("/bin/ctr")
	spec.Container = "app"
	p, err := s.Kernel.StartProcess(spec)
	if err != nil {
		t.Fatal(err)
	}
	other, err := s.Kernel.StartProcess(execSpec("/bin/other"))
	if err != nil {
		t.Fatal(err)
	}
	<-childUp
	<-pidKnown
	child := s.Kernel.ThreadGroupByPID(int32(childPID.Load()))
	if child == nil {
		t.Fatalf("no process has the child's pid %d", childPID.Load())
	}
	if child.Container() != "app" {
		t.Fatalf("the child of the container's init is in container %q, want app", child.Container())
	}
	if tg := s.Kernel.ThreadGroupByPID(other.PID()); tg.Container() != "" {
		t.Errorf("a process started without a container is in %q", tg.Container())
	}
	p.SignalAsInit(int(unix.SIGTERM)) // no handler: ignored, as by a pid namespace's init
	select {
	case <-p.Done():
		t.Fatal("SIGTERM without a handler ended the container's init")
	case <-time.After(20 * time.Millisecond):
	}
	s.Kernel.SignalContainer("app", int(unix.SIGKILL))
	if st := waitProcess(t, p); st != (kernel.ExitStatus{Signo: int(unix.SIGKILL)}) {
		t.Errorf("the container's init: %+v, want SIGKILL", st)
	}
	living := func(pid int32) bool {
		for _, tg := range s.Kernel.ThreadGroups() {
			if tg.PID() == pid {
				return true
			}
		}
		return false
	}
	if !within(nil, func() bool { return !living(int32(childPID.Load())) }) {
		t.Error("the container's other process outlived SignalContainer's SIGKILL")
	}
	select {
	case <-other.Done():
		t.Error("SignalContainer killed a process of another container")
	default:
	}
	other.Signal(int(unix.SIGKILL))
	waitProcess(t, other)
	close(release)
	s.Wait()
}
