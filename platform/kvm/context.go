package kvm

import (
	"fmt"
	"os"
	"runtime"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/platform"
	"github.com/moat-sandbox/moat/sentry/arch"
)

// context is one guest thread: a vCPU, run by the thread of the goroutine
// that calls Switch. That goroutine stays on its thread for the context's
// life (KVM serves a vCPU fastest from one thread, and Interrupt signals
// that thread).
type context struct {
	as *addressSpace
	v  *vcpu

	tid    int
	locked bool

	// running is set while Switch may be in the guest; interrupted is set
	// by Interrupt. Switch sets running before it looks at interrupted,
	// Interrupt sets interrupted before it looks at running: so either
	// Switch sees the interrupt or Interrupt sees the thread running and
	// kicks it. exits counts the vCPU's returns from KVM_RUN, for
	// shootdowns to wait on.
	running     atomic.Bool
	interrupted atomic.Bool
	exits       atomic.Uint64

	// CPU time, in nanoseconds of monotonic time: runningSince is when the
	// running Switch entered the guest (0 outside), returned when the
	// last Switch returned, parked when Park came after it (0 if not).
	runningSince atomic.Int64
	returned     int64
	parked       int64
	cpu          platform.HostCPUBound // bounds a long run's guest time by the thread's CPU clock

	ended atomic.Bool
}

var _ platform.Context = (*context)(nil)

// kickSignal makes a thread in KVM_RUN leave the guest. The Go runtime
// handles SIGURG itself (it is its preemption signal) and nothing in the
// sentry waits for it.
const kickSignal = unix.SIGURG

var epoch = time.Now()

func now() int64 { return int64(time.Since(epoch)) + 1 }

// Switch implements platform.Context.
func (c *context) Switch(regs *arch.Registers) (platform.Event, error) {
	if !c.locked {
		runtime.LockOSThread()
		c.tid = unix.Gettid()
		c.locked = true
		cpu, ok := threadCPUClock()
		c.cpu.Bound(0, cpu, ok)
	}
	as, v := c.as, c.v
	if c.ended.Load() || as.dead.Load() {
		return platform.Event{}, errKilled
	}
	as.flush(c)

	toKVMRegs(v.regs(), regs)
	s := v.sregs()
	s.CS, s.SS = segment(userCS, true), segment(userDS, false)
	s.FS.Base, s.GS.Base = regs.FSBase, regs.GSBase
	v.markDirty(kvmSyncX86Regs | kvmSyncX86Sregs)

	c.running.Store(true)
	start := now()
	times := platform.Event{KernelTime: c.kernelTime(start)}
	if c.interrupted.Swap(false) {
		c.running.Store(false)
		c.returned = now()
		times.Kind = platform.EventInterrupt
		return times, nil
	}
	ev, err := c.run(regs, &times)
	c.running.Store(false)
	c.returned = now()
	return ev, err
}

// run enters the guest until an event for the kernel.
func (c *context) run(regs *arch.Registers, times *platform.Event) (platform.Event, error) {
	as, v := c.as, c.v
	for {
		// Flush the TLB if the address space lost access since this vCPU
		// last ran in it, or if it ran another (see cr3PWT).
		gen := as.gen.Load()
		cr3 := as.load()
		if v.lastAS == as && v.lastGen == gen {
			cr3 = v.lastCR3
		} else if v.lastCR3 == cr3 {
			cr3 |= cr3PWT
		}
		if s := v.sregs(); s.CR3 != cr3 {
			s.CR3 = cr3
			v.markDirty(kvmSyncX86Sregs)
		}
		v.lastAS, v.lastGen, v.lastCR3 = as, gen, cr3
		if err := v.loadFP(); err != nil {
			return platform.Event{}, err
		}

		entered := now()
		c.runningSince.Store(entered)
		_, err := ioctl(v.fd, kvmRun, 0)
		c.runningSince.Store(0)
		c.exits.Add(1)
		times.GuestTime += c.boundedGuestTime(time.Duration(now() - entered))
		v.fp.fresh = false

		if err == unix.EINTR {
			// Clear before looking at why, so that a kick that comes
			// meanwhile stays pending for the next KVM_RUN.
			v.setImmediateExit(false)
			if c.ended.Load() || as.dead.Load() {
				return platform.Event{}, errKilled
			}
			if v.sregs().CS.DPL == 3 && c.interrupted.Swap(false) {
				fromKVMRegs(regs, v.regs())
				regs.FSBase, regs.GSBase = v.sregs().FS.Base, v.sregs().GS.Base
				times.Kind = platform.EventInterrupt
				return *times, nil
			}
			// A shootdown's kick, a stray signal, or a vCPU stopped in the
			// stub before its OUT: go on from where it is.
			continue
		}
		if err != nil {
			return platform.Event{}, fmt.Errorf("kvm: run vCPU %d: %w", v.id, err)
		}
		if as.dead.Load() {
			return platform.Event{}, errKilled
		}
		if r := v.exitReason(); r != exitIO {
			return platform.Event{}, c.exitError(r)
		}
		ev, err := c.decode(regs)
		if err != nil {
			return platform.Event{}, err
		}
		if ev.Kind == platform.EventFault && ev.Signo == int32(unix.SIGFPE) && ev.Code == 0 {
			// A floating-point exception with none of its flags unmasked
			// left is spurious: Linux sends no signal for it either.
			c.resumeUser(regs)
			continue
		}
		ev.GuestTime, ev.KernelTime = times.GuestTime, times.KernelTime
		return ev, nil
	}
}

// boundedGuestTime is what of a run of guest code that took g counts as CPU
// time: a long run's is bounded by the thread's CPU clock, which the thread
// keeps for good once locked (platform.HostCPUBound).
func (c *context) boundedGuestTime(g time.Duration) time.Duration {
	if g <= platform.RunningVouched {
		return c.cpu.Bound(g, 0, false)
	}
	cpu, ok := threadCPUClock()
	return c.cpu.Bound(g, cpu, ok)
}

// threadCPUClock reads the calling thread's CPU clock (ns).
func threadCPUClock() (uint64, bool) {
	var ts unix.Timespec
	if unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts) != nil {
		return 0, false
	}
	return uint64(ts.Nano()), true
}

// decode reads the event the stub left the VM for.
func (c *context) decode(regs *arch.Registers) (platform.Event, error) {
	v := c.v
	kr, s := v.regs(), v.sregs()
	e := exit{port: v.ioPort(), regs: *kr, cr2: s.CR2, fp: v.fetchFPQuiet, syscallBefore: c.as.syscallBefore}
	// An exception's frame is on the vCPU's own page, at its stack
	// pointer.
	if e.port != syscallPort {
		va := vcpuVA(v.id)
		if kr.Rsp < va || kr.Rsp >= va+pageSize {
			return platform.Event{}, fmt.Errorf("kvm: vCPU %d left the stub (port %#x) with its stack at %#x", v.id, e.port, kr.Rsp)
		}
		e.frame = v.page[kr.Rsp-va:]
	}
	ev, err := decodeExit(&e, regs, c.as.p.stub.lstar())
	regs.FSBase, regs.GSBase = s.FS.Base, s.GS.Base
	return ev, err
}

// resumeUser loads regs for an entry that the kernel never sees.
func (c *context) resumeUser(regs *arch.Registers) {
	v := c.v
	toKVMRegs(v.regs(), regs)
	s := v.sregs()
	s.CS, s.SS = segment(userCS, true), segment(userDS, false)
	v.markDirty(kvmSyncX86Regs | kvmSyncX86Sregs)
}

// fetchFPQuiet is fetchFP for reading only.
func (v *vcpu) fetchFPQuiet() []byte {
	dirty := v.fp.dirty
	b := v.fetchFP()
	v.fp.dirty = dirty
	return b
}

// exitError describes an exit that no guest thread should cause.
func (c *context) exitError(reason uint32) error {
	v := c.v
	kr, s := v.regs(), v.sregs()
	what := map[uint32]string{exitHLT: "halted", exitShutdown: "shut down (triple fault)", exitMMIO: "touched unbacked guest-physical memory",
		exitFailEntry: "failed to enter", exitInternalError: "hit an internal KVM error", exitException: "raised an exception"}[reason]
	if what == "" {
		what = fmt.Sprintf("exited with reason %d", reason)
	}
	return fmt.Errorf("kvm: vCPU %d %s at %#x (cs %#x, rsp %#x, cr2 %#x)", v.id, what, kr.Rip, s.CS.Selector, kr.Rsp, s.CR2)
}

// kick makes the thread leave the guest soon if it is in KVM_RUN, or not
// enter it.
func (c *context) kick() {
	c.v.setImmediateExit(true)
	unix.Tgkill(os.Getpid(), c.tid, kickSignal)
}

// Interrupt implements platform.Context. A thread in the sentry is not
// kicked: its next Switch returns at once instead.
func (c *context) Interrupt() {
	c.interrupted.Store(true)
	if c.running.Load() {
		c.kick()
	}
}

// FPState implements platform.Context.
func (c *context) FPState() []byte { return c.v.fetchFP() }

// Park implements platform.Context. Nothing waits for a parked thread in
// this platform: it only ends the kernel's time.
func (c *context) Park() {
	if c.parked == 0 {
		c.parked = now()
	}
}

// kernelTime is how long the kernel worked since the last Switch returned:
// until now, or until it parked the thread.
func (c *context) kernelTime(t int64) time.Duration {
	end := t
	if c.parked != 0 {
		end, c.parked = c.parked, 0
	}
	if c.returned == 0 || end < c.returned {
		return 0
	}
	return time.Duration(end - c.returned)
}

// Running implements platform.Context.
func (c *context) Running() time.Duration {
	if since := c.runningSince.Load(); since != 0 {
		if d := now() - since; d > 0 {
			return time.Duration(d)
		}
	}
	return 0
}

// Release implements platform.Context.
func (c *context) Release() {
	as := c.as
	as.mu.Lock()
	if as.contexts != nil {
		delete(as.contexts, c)
	}
	as.mu.Unlock()
	c.end()
}

// end gives the vCPU back, once: the context's Switch fails from now on.
// The kernel ends a thread only after its last Switch returned.
func (c *context) end() {
	if c.ended.Swap(true) {
		return
	}
	// A Switch still in the guest (its address space was released under
	// it) leaves it before another thread may get the vCPU.
	for c.running.Load() {
		c.kick()
		time.Sleep(10 * time.Microsecond)
	}
	c.as.p.putVCPU(c.v)
}
