package kernel_test

import (
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/platform/fake"
	"github.com/moat-sandbox/moat/sentry/kernel"
	"github.com/moat-sandbox/moat/sentry/kernel/kerneltest"
)

// startInitHeld runs an init that waits until release is closed, then
// exits 0; it returns once init runs.
func startInitHeld(t *testing.T, s *kerneltest.Sandbox) (release chan struct{}) {
	release = make(chan struct{})
	running := make(chan struct{})
	s.Start(func(g *fake.Guest) {
		close(running)
		for {
			select {
			case <-release:
				return
			default:
				sleep(g, time.Millisecond)
			}
		}
	}, kerneltest.Init{})
	<-running
	return release
}

func execSpec(name string) kernel.InitSpec {
	return kernel.InitSpec{Argv: []string{name}, Cwd: "/", Umask: 0o022, CapEffective: kernel.AllCaps,
		CapPermitted: kernel.AllCaps, CapBounding: kernel.AllCaps}
}

func waitProcess(t *testing.T, p *kernel.Process) kernel.ExitStatus {
	t.Helper()
	select {
	case <-p.Done():
	case <-time.After(kerneltest.Timeout):
		t.Fatalf("process %d still runs after %v", p.PID(), kerneltest.Timeout)
	}
	return p.ExitStatus()
}

func TestAStartedProcessHasItsParentOutsideAndLeadsItsOwnSession(t *testing.T) {
	s := newSandbox(t)
	var ppid, pid, pgid, sid atomic.Int64
	s.AddProgram("/bin/probe", func(g *fake.Guest) {
		pid.Store(int64(getpid(g)))
		ppid.Store(int64(getppid(g)))
		pgid.Store(int64(getpgid(g, 0)))
		sid.Store(int64(getsid(g, 0)))
		exitGroup(g, 7)
	})
	release := startInitHeld(t, s)
	p, err := s.Kernel.StartProcess(execSpec("/bin/probe"))
	if err != nil {
		t.Fatal(err)
	}
	if st := waitProcess(t, p); st != (kernel.ExitStatus{Code: 7}) {
		t.Errorf("exit status %+v, want code 7", st)
	}
	if pid.Load() != int64(p.PID()) || pid.Load() == 1 {
		t.Errorf("getpid() = %d, Process.PID() = %d", pid.Load(), p.PID())
	}
	if ppid.Load() != 0 {
		t.Errorf("getppid() = %d, want 0: the parent is outside the sandbox", ppid.Load())
	}
	if pgid.Load() != pid.Load() || sid.Load() != pid.Load() {
		t.Errorf("pgid %d, sid %d; want both %d", pgid.Load(), sid.Load(), pid.Load())
	}
	for _, tg := range s.Kernel.ThreadGroups() {
		if tg.PID() == p.PID() {
			t.Errorf("process %d is still in the tree after it ended: nobody reaped it", p.PID())
		}
	}
	close(release)
	if st := s.Wait(); st != (kernel.ExitStatus{}) {
		t.Errorf("init ended with %+v", st)
	}
}

func TestAStartedProcessIsKilledBySignalFromOutside(t *testing.T) {
	s := newSandbox(t)
	started := make(chan struct{})
	s.AddProgram("/bin/pause", func(g *fake.Guest) {
		close(started)
		g.Call(unix.SYS_PAUSE)
	})
	release := startInitHeld(t, s)
	p, err := s.Kernel.StartProcess(execSpec("/bin/pause"))
	if err != nil {
		t.Fatal(err)
	}
	<-started
	p.Signal(int(unix.SIGTERM))
	if st := waitProcess(t, p); st != (kernel.ExitStatus{Signo: int(unix.SIGTERM)}) {
		t.Errorf("exit status %+v, want killed by SIGTERM (it is no init: the default action applies)", st)
	}
	close(release)
	s.Wait()
}

func TestOrphansOfAStartedProcessGoToInit(t *testing.T) {
	s := newSandbox(t)
	var orphanPPID atomic.Int64
	orphanDone := make(chan struct{})
	s.AddProgram("/bin/parent", func(g *fake.Guest) {
		fork(t, g, func(g *fake.Guest) {
			within(g, func() bool { return getppid(g) == 1 })
			orphanPPID.Store(int64(getppid(g)))
			close(orphanDone)
		})
	})
	release := startInitHeld(t, s)
	p, err := s.Kernel.StartProcess(execSpec("/bin/parent"))
	if err != nil {
		t.Fatal(err)
	}
	waitProcess(t, p)
	select {
	case <-orphanDone:
	case <-time.After(kerneltest.Timeout):
		t.Fatal("the orphan did not finish")
	}
	if orphanPPID.Load() != 1 {
		t.Errorf("the orphan's parent is %d, want init (1)", orphanPPID.Load())
	}
	close(release)
	s.Wait()
}

func TestStartProcessAfterInitEndedIsRefused(t *testing.T) {
	s := newSandbox(t)
	s.AddProgram("/bin/true", func(g *fake.Guest) {})
	s.Run(func(g *fake.Guest) {})
	if _, err := s.Kernel.StartProcess(execSpec("/bin/true")); !errors.Is(err, kernel.ErrSandboxEnded) {
		t.Errorf("StartProcess after the end = %v, want ErrSandboxEnded", err)
	}
}

func TestStartProcessOfAMissingProgramSaysWhich(t *testing.T) {
	s := newSandbox(t)
	release := startInitHeld(t, s)
	defer func() { close(release); s.Wait() }()
	for _, name := range []string{"/bin/nope", "nope"} {
		_, err := s.Kernel.StartProcess(execSpec(name))
		var initErr *kernel.InitError
		if !errors.As(err, &initErr) || !containsAll(err.Error(), name) || initErr.Unrunnable != unix.ENOENT {
			t.Errorf("StartProcess of a missing program %q = %v, want an InitError naming it, unrunnable ENOENT", name, err)
		}
	}
}

func containsAll(s string, subs ...string) bool {
	for _, sub := range subs {
		found := false
		for i := 0; i+len(sub) <= len(s); i++ {
			if s[i:i+len(sub)] == sub {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}

func TestTheConfigsOOMScoreAdjIsTheProcesssAndItsFloor(t *testing.T) {
	s := newSandbox(t)
	var adj atomic.Int64
	s.AddProgram("/bin/probe", func(g *fake.Guest) {
		for _, tg := range s.Kernel.ThreadGroups() {
			if tg.PID() == int32(getpid(g)) {
				adj.Store(int64(tg.OOMScoreAdj()))
				// The floor moved with it: going below it needs CAP_SYS_RESOURCE.
				if err := tg.SetOOMScoreAdj(-501, false, false); err != unix.EACCES {
					t.Errorf("lowering below the config's value without privilege = %v, want EACCES", err)
				}
			}
		}
	})
	release := startInitHeld(t, s)
	defer func() { close(release); s.Wait() }()
	spec := execSpec("/bin/probe")
	v := -500
	spec.OOMScoreAdj = &v
	p, err := s.Kernel.StartProcess(spec)
	if err != nil {
		t.Fatal(err)
	}
	waitProcess(t, p)
	if adj.Load() != -500 {
		t.Errorf("oom_score_adj = %d, want -500", adj.Load())
	}
	bad := 1001
	spec.OOMScoreAdj = &bad
	if _, err := s.Kernel.StartProcess(spec); err == nil || !containsAll(err.Error(), "oomScoreAdj", "1001") {
		t.Errorf("oomScoreAdj 1001 = %v, want an error naming it", err)
	}
}
