package kernel_test

import (
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/platform/fake"
	"github.com/moat-sandbox/moat/sentry/kernel/kerneltest"
	"github.com/moat-sandbox/moat/sentry/vfs"
)

// releaseProbe is an open file that records when its description's last
// reference goes, as a host pipe's write end is closed then.
type releaseProbe struct{ released atomic.Bool }

func (r *releaseProbe) Read(*vfs.IOSeq, int64) (int, error)  { return 0, nil }
func (r *releaseProbe) Write(*vfs.IOSeq, int64) (int, error) { return 0, nil }
func (r *releaseProbe) Stat() (vfs.Stat, error)              { return vfs.Stat{}, nil }
func (r *releaseProbe) Ioctl(uint32, uintptr, vfs.IoctlIO) (uintptr, error) {
	return 0, unix.ENOTTY
}
func (r *releaseProbe) Release() { r.released.Store(true) }

// A containerd shim or conmon reads an exec'd process's output until the
// pipe ends: the sentry must let go of the process's stdio (and preserved
// fds) once the process has closed them by ending, or the reader waits
// forever.
func TestTheFilesOfAStartedProcessAreReleasedWhenItEnds(t *testing.T) {
	s := newSandbox(t)
	release := startInitHeld(t, s)
	defer func() { close(release); s.Wait() }()
	s.AddProgram("/bin/true", func(g *fake.Guest) {})
	spec := execSpec("/bin/true")
	var probes [4]*releaseProbe
	for i := range probes {
		probes[i] = &releaseProbe{}
	}
	for i := 0; i < 3; i++ {
		spec.Stdio[i] = vfs.NewFile(probes[i], vfs.Path{}, unix.O_RDWR)
	}
	spec.ExtraFiles = []*vfs.File{vfs.NewFile(probes[3], vfs.Path{}, unix.O_RDWR)}
	p, err := s.Kernel.StartProcess(spec)
	if err != nil {
		t.Fatal(err)
	}
	waitProcess(t, p)
	deadline := time.Now().Add(kerneltest.Timeout)
	for fd, probe := range probes {
		for !probe.released.Load() && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond)
		}
		if !probe.released.Load() {
			t.Errorf("fd %d's file is still held after the process ended", fd)
		}
	}
}
