package systrap

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

func rawForkStub(ctlFD, requestOff, codeAddr, codeLen, entry uintptr, newMask, oldMask *uint64) (pid, errno uintptr)

// stubProcess is one stub: a host process with a syscall thread serving the
// sentry's requests through its request and result pages.
type stubProcess struct {
	p       *Platform
	pid     int
	unit    uint64 // control-file offset of its request page; the result page follows
	dead    atomic.Bool
	mu      sync.Mutex // one request at a time; guards seq and the fields below
	seq     uint32
	threads map[int]*threadContext // live guest threads by slot index
	exited  []*threadContext       // released threads: their slots are reused

	// finishing counts down the two events after which the stub's
	// control-file units may be reused: its owner released it, and the
	// reaper collected the process (until then a thread of a killed stub
	// may still write to them); and each hold.
	finishing atomic.Int32
}

// forkSourceStub forks the sentry into the source stub. The goroutine that
// forks stays locked to its thread for the sandbox's life: the kernel sends a
// stub its parent-death signal when the *thread* that created it exits, and
// every later stub is cloned with CLONE_PARENT, so shares that parent.
func (p *Platform) forkSourceStub() (*stubProcess, error) {
	unit, err := p.ctl.allocUnit()
	if err != nil {
		return nil, err
	}
	type result struct {
		pid int
		err error
	}
	done := make(chan result)
	go func() {
		runtime.LockOSThread()
		if rseqRegistered() {
			done <- result{err: fmt.Errorf("systrap: this thread has an rseq area registered (a sentry linked " +
				"with the C library): a forked stub would die unmapping it; build moat with CGO_ENABLED=0")}
			runtime.UnlockOSThread()
			return
		}
		all, old := ^uint64(0), uint64(0)
		pid, errno := rawForkStub(uintptr(p.ctl.fd), uintptr(unit), codeVA, codeSize,
			codeVA+uintptr(p.entries.firstInit), &all, &old)
		if errno != 0 {
			done <- result{err: fmt.Errorf("systrap: fork source stub: %w", unix.Errno(errno))}
			runtime.UnlockOSThread()
			return
		}
		done <- result{pid: int(pid)}
		select {} // keep this thread alive: see above
	}()
	r := <-done
	if r.err != nil {
		p.ctl.freeUnit(unit)
		return nil, r.err
	}
	s := newStubProcess(p, unit)
	s.pid = r.pid
	stubReaper.register(s)
	stubReaper.start()
	// A first request proves the stub is up and confined.
	if _, err := s.call(urgent, op{kind: opSyscall, nr: unix.SYS_GETPPID}); err != nil {
		return nil, fmt.Errorf("systrap: source stub did not start: %w", err)
	}
	return s, nil
}

// rseqRegistered reports whether the calling thread has an rseq area
// registered. The C library registers one on every thread it starts; a stub
// forked from such a thread inherits the registration, and once the stub
// unmaps the sentry's memory the kernel kills it on its next return to user
// space. Registering an area while one is registered fails (EBUSY for the
// same area, EINVAL or EPERM for another), so trying tells.
//
// The probe's area is a page of its own: while it is registered the kernel
// writes the CPU number into it at every return to user space, so it must
// not be on a goroutine's stack (which moves, and whose neighbouring words
// the kernel would overwrite), and the unregistering call must name the
// same address.
func rseqRegistered() bool {
	const rseqSig = 0x53053053
	const rseqSize = 32 // struct rseq; a page is aligned enough
	area, err := unix.Mmap(-1, 0, unix.Getpagesize(), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		return false // cannot tell; a stub that dies of it is reported as dead
	}
	addr := uintptr(unsafe.Pointer(&area[0]))
	_, _, errno := unix.RawSyscall6(unix.SYS_RSEQ, addr, rseqSize, 0, rseqSig, 0, 0)
	if errno == 0 {
		if _, _, errno := unix.RawSyscall6(unix.SYS_RSEQ, addr, rseqSize, 1 /* RSEQ_FLAG_UNREGISTER */, rseqSig, 0, 0); errno != 0 {
			// Still registered: the page must stay, and a stub forked
			// from this thread would die.
			return true
		}
		unix.Munmap(area)
		return false
	}
	unix.Munmap(area)
	return errno == unix.EBUSY || errno == unix.EINVAL || errno == unix.EPERM
}

// newStub clones a fresh stub from the source stub.
func (p *Platform) newStub(u urgency) (*stubProcess, error) {
	unit, err := p.ctl.allocUnit()
	if err != nil {
		return nil, err
	}
	*p.ctl.u32(unit + reqSeq) = 0
	*p.ctl.u32(unit + 4096 + resAck) = 0
	s := newStubProcess(p, unit)

	pid, err := p.source.call(u, op{kind: opCloneStub, args: [6]uint64{unix.CLONE_PARENT | uint64(unix.SIGCHLD), 0, 0, 0, 0, unit}})
	if err == nil {
		s.pid = int(pid)
		stubReaper.register(s)
	}
	if err != nil {
		p.ctl.freeUnit(unit)
		return nil, fmt.Errorf("systrap: clone stub: %w", err)
	}
	if _, err := s.call(u, op{kind: opSyscall, nr: unix.SYS_GETPPID}); err != nil {
		s.destroy()
		return nil, fmt.Errorf("systrap: new stub did not start: %w", err)
	}
	return s, nil
}

func newStubProcess(p *Platform, unit uint64) *stubProcess {
	s := &stubProcess{p: p, unit: unit, threads: make(map[int]*threadContext)}
	s.finishing.Store(2)
	return s
}

// destroy kills the stub process. It does not wait: its control-file units
// are freed once the reaper has collected it too (finish).
func (s *stubProcess) destroy() {
	if !s.dead.Load() {
		unix.Kill(s.pid, unix.SIGKILL)
	}
	s.finish()
}

// hold keeps the stub's control-file units from being freed until the
// matching finish: a thread being started writes into its slot's unit. It
// reports false if they are freed already.
func (s *stubProcess) hold() bool {
	for {
		n := s.finishing.Load()
		if n <= 0 {
			return false
		}
		if s.finishing.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

// finish is called by destroy, by the reaper and after each hold; the last
// call frees the stub's control-file units.
func (s *stubProcess) finish() {
	if s.finishing.Add(-1) != 0 {
		return
	}
	s.mu.Lock()
	for _, t := range s.threads {
		s.p.ctl.freeUnit(t.unit)
	}
	for _, t := range s.exited {
		s.p.ctl.freeUnit(t.unit)
	}
	s.threads, s.exited = nil, nil
	s.mu.Unlock()
	s.p.ctl.freeUnit(s.unit)
}
