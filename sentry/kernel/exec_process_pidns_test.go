package kernel_test

import (
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/platform/fake"
	"github.com/moat-sandbox/moat/sentry/kernel"
	"github.com/moat-sandbox/moat/sentry/kernel/kerneltest"
)

// A process made from outside in a namespace of its own (a pod's
// container): it is pid 1 there with no parent in it, a process later
// started in the namespace (`moat exec`) has its parent outside too, the
// namespace lists them alone, and the end of its init ends the rest and
// closes the namespace to new processes.
func TestAProcessCreatedInANewPIDNamespaceIsItsInit(t *testing.T) {
	s := newSandbox(t)
	var initPID, initPPID, childPID, childPPID, execPID, execPPID atomic.Int64
	childUp := make(chan struct{})
	s.AddProgram("/bin/nsinit", func(g *fake.Guest) {
		initPID.Store(int64(getpid(g)))
		initPPID.Store(int64(getppid(g)))
		fork(t, g, func(g *fake.Guest) {
			childPID.Store(int64(getpid(g)))
			childPPID.Store(int64(getppid(g)))
			close(childUp)
			pause(g)
		})
		pause(g)
	})
	s.AddProgram("/bin/probe", func(g *fake.Guest) {
		execPID.Store(int64(getpid(g)))
		execPPID.Store(int64(getppid(g)))
	})
	release := startInitHeld(t, s)
	ns, err := s.Kernel.NewPIDNamespace()
	if err != nil {
		t.Fatal(err)
	}
	spec := execSpec("/bin/nsinit")
	spec.PIDNamespace = ns
	p, err := s.Kernel.CreateProcess(spec)
	if err != nil {
		t.Fatal(err)
	}
	p.Run()
	select {
	case <-childUp:
	case <-time.After(kerneltest.Timeout):
		t.Fatal("the namespace's init made no child")
	}
	if initPID.Load() != 1 || initPPID.Load() != 0 || childPID.Load() != 2 || childPPID.Load() != 1 {
		t.Errorf("init getpid %d getppid %d, its child %d %d; want 1 0, 2 1",
			initPID.Load(), initPPID.Load(), childPID.Load(), childPPID.Load())
	}
	if p.PID() == 1 {
		t.Errorf("Process.PID() = 1: it is the sandbox's id, not the namespace's")
	}
	spec = execSpec("/bin/probe")
	spec.PIDNamespace = ns
	e, err := s.Kernel.StartProcess(spec)
	if err != nil {
		t.Fatal(err)
	}
	waitProcess(t, e)
	if execPID.Load() != 3 || execPPID.Load() != 0 {
		t.Errorf("a process started in the namespace: getpid %d getppid %d, want 3 0", execPID.Load(), execPPID.Load())
	}
	in := s.Kernel.ThreadGroupsIn(ns)
	if len(in) != 2 || in[0].PID() != p.PID() || in[0].SeenID(in[0].PID()) != 1 || in[1].SeenID(in[1].PID()) != 2 {
		t.Errorf("the namespace lists %d processes, want its init (1) and its child (2) alone", len(in))
	}
	p.SignalAsInit(int(unix.SIGTERM)) // no handler: as from the parent namespace, not delivered
	p.Signal(int(unix.SIGKILL))
	if st := waitProcess(t, p); st != (kernel.ExitStatus{Signo: int(unix.SIGKILL)}) {
		t.Errorf("init ended with %+v, want SIGKILL (SIGTERM without a handler must not reach it)", st)
	}
	if in := s.Kernel.ThreadGroupsIn(ns); len(in) != 0 {
		t.Errorf("%d processes of the namespace outlive its init", len(in))
	}
	if _, err := s.Kernel.StartProcess(execSpec("/bin/probe")); err != nil {
		t.Errorf("a process in the sandbox's namespace after the nested one ended: %v", err)
	}
	spec = execSpec("/bin/probe")
	spec.PIDNamespace = ns
	if _, err := s.Kernel.StartProcess(spec); err != kernel.ErrSandboxEnded {
		t.Errorf("StartProcess in a namespace whose init has ended: %v, want ErrSandboxEnded", err)
	}
	close(release)
	s.Wait()
}
