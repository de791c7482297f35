package systrap

import (
	"fmt"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/platform"
	"github.com/moat-sandbox/moat/sentry/arch"
)

// threadContext is one guest thread, running on its own stub thread. Its
// slot holds the state word of the hand-off and the signal stack on which
// the kernel saves the guest's registers at every trap.
type threadContext struct {
	as     *addressSpace
	stub   *stubProcess
	index  int    // slot index in the stub
	unit   uint64 // control-file offset of the slot
	tid    int
	fs, gs uint64 // FS and GS bases the stub thread has now
	remap  bool   // the thread never started: its slot is mapped anew if reused

	// running is set while the thread may be running guest code;
	// interrupted is set by Interrupt. Switch sets running before it looks
	// at interrupted, Interrupt sets interrupted before it looks at running:
	// so either Switch sees the interrupt or Interrupt sees the thread
	// running and kicks it.
	running     atomic.Bool
	interrupted atomic.Bool

	// CPU time, in TSC ticks: runningSince is when the running Switch
	// resumed the thread (0 outside a Switch); returned is when the last
	// Switch returned, and parked when Park came after it (0 if not).
	runningSince atomic.Uint64
	returned     uint64
	parked       uint64

	cpu platform.HostCPUBound // bounds a long run's guest time by the stub thread's CPU clock

	spins spinWindowCount // this thread's waits in Switch (spinpolicy.go)
}

var _ platform.Context = (*threadContext)(nil)

// Linux's ucontext and siginfo layouts on x86-64.
const (
	ucMcontext     = 40
	ucSize         = 936 // sizeof(struct ucontext) incl. the signal mask
	mcErr          = ucMcontext + 19*8
	mcTrapno       = ucMcontext + 20*8
	siCode         = 8
	siAddr         = 16
	siSize         = 128
	sysSeccomp     = 1 // si_code of a seccomp SIGSYS
	pfWrite        = 1 << 1
	pfUser         = 1 << 2
	pfInstruction  = 1 << 4
	cloneThreadFlg = unix.CLONE_VM | unix.CLONE_FS | unix.CLONE_FILES | unix.CLONE_SIGHAND |
		unix.CLONE_THREAD | unix.CLONE_SYSVSEM | unix.CLONE_CHILD_SETTID | unix.CLONE_CHILD_CLEARTID
)

func (c *threadContext) slotVA() uint64 { return slotsVA + uint64(c.index)*slotSize }

// word returns the sentry's pointer to the 32-bit word at offset off of the
// slot's state page.
func (c *threadContext) word(off uint64) *uint32 { return c.stub.p.ctl.u32(c.unit + off) }

// NewContext implements platform.AddressSpace: it takes the spare thread,
// or starts one and waits until it parks in the handler. Starting a thread
// costs host work (docs/SPECIFICATION.md); from the second context on, a
// spare is made in the background after each, so that the guest's next
// thread costs none of it.
func (as *addressSpace) NewContext() (platform.Context, error) {
	as.spareMu.Lock()
	for as.spare == nil && as.refilling {
		as.spareMade.Wait() // it comes sooner than another would
	}
	c := as.spare
	as.spare = nil
	as.contexts++
	refill := as.contexts > 1
	as.refilling = refill
	as.spareMu.Unlock()
	if refill {
		go as.makeSpare()
	}
	if c != nil {
		return c, nil
	}
	return as.startThread(urgent)
}

// makeSpare starts the spare thread. If that fails (the stub is dying, or
// out of slots), there is none, and the next NewContext finds out why.
func (as *addressSpace) makeSpare() {
	c, _ := as.startThread(aheadOfNeed)
	as.spareMu.Lock()
	as.spare, as.refilling = c, false
	as.spareMade.Broadcast()
	as.spareMu.Unlock()
}

// startThread starts a stub thread in a free slot: one whose earlier thread
// has exited (its mapping stays) or a new one. A thread started ahead of
// need sleeps in the handler once parked instead of spinning there.
func (as *addressSpace) startThread(u urgency) (*threadContext, error) {
	s := as.stub
	if !s.hold() {
		return nil, errStubDead
	}
	defer s.finish()
	c, mapSlot, err := s.takeSlot(as)
	if err != nil {
		return nil, err
	}
	va := c.slotVA()
	ctl := s.p.ctl
	// The thread's signal stack: a stack_t in the state page.
	*ctl.u64(c.unit + tsAltStack) = va + altStackOff
	*ctl.u32(c.unit + tsAltStack + 8) = 0
	*ctl.u64(c.unit + tsAltStack + 16) = slotSize - altStackOff
	spin := requestSpinIters
	if u == aheadOfNeed {
		*c.word(tsPark) = 1
		spin = 0
	}

	if err := as.flush(u); err != nil {
		c.forget()
		return nil, err
	}
	clone := op{kind: opCloneThread, args: [6]uint64{cloneThreadFlg, va + slotSize, 0, va + tsTID, 0, va}}
	ops := []op{clone}
	if mapSlot {
		ops = []op{{nr: unix.SYS_MMAP, args: [6]uint64{va, slotSize, unix.PROT_READ | unix.PROT_WRITE,
			unix.MAP_SHARED | unix.MAP_FIXED, uint64(ctl.fd), c.unit}}, clone}
	}
	tid, err := s.call(u, ops...)
	if err != nil {
		c.forget()
		return nil, fmt.Errorf("systrap: start stub thread: %w", err)
	}
	c.tid = int(tid)
	// The new thread parks with ud2 in stub code.
	if !waitFor(c.word(tsState), threadTrapped, c.word(tsSentrySleeping), &s.dead, spin) {
		return nil, errStubDead
	}
	if signo := atomic.LoadUint32(c.word(tsSigno)); signo != uint32(unix.SIGILL) {
		c.Release()
		return nil, fmt.Errorf("systrap: new stub thread parked with signal %d", signo)
	}
	// Guest code runs below the sentry's priority (see guestNice).
	unix.Setpriority(unix.PRIO_PROCESS, c.tid, guestNice)
	return c, nil
}

// guestNice is the host nice value of the threads that run guest code. The
// sentry's threads and the stubs' syscall threads keep the default (0). A
// guest that keeps every CPU busy (64 threads spinning) would otherwise
// hold up each hand-off to the sentry for a host scheduling slice: thread
// creation, a timer's wake-up, even the exit of the spinning process took
// seconds. At 5 the host gives a sentry thread three times a guest thread's
// weight.
const guestNice = 5

// takeSlot returns a context in a free slot of the stub, and whether the
// slot still has to be mapped.
func (s *stubProcess) takeSlot(as *addressSpace) (*threadContext, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.threads == nil {
		return nil, false, errStubDead // finished: its units are freed
	}
	for i, old := range s.exited {
		if atomic.LoadUint32(old.word(tsTID)) != 0 {
			// Still on its way out; a kick that was pending when it was
			// released traps it once more, and it is sent on again.
			if atomic.LoadUint32(old.word(tsState)) == threadTrapped {
				old.sendToExit()
			}
			continue
		}
		s.exited = append(s.exited[:i], s.exited[i+1:]...)
		// The kernel cleared the tid: the old thread runs no more code, so
		// its state page can be reset for the new one.
		clear(s.p.ctl.mem[old.unit : old.unit+tsEnd])
		c := &threadContext{as: as, stub: s, index: old.index, unit: old.unit}
		s.threads[c.index] = c
		return c, old.remap, nil
	}
	index := -1
	for i := 0; i < maxThreads; i++ {
		if s.threads[i] == nil && !s.exitedSlot(i) {
			index = i
			break
		}
	}
	if index < 0 {
		return nil, false, unix.EAGAIN
	}
	unit, err := s.p.ctl.allocUnit()
	if err != nil {
		return nil, false, err
	}
	c := &threadContext{as: as, stub: s, index: index, unit: unit}
	s.threads[index] = c
	return c, true, nil
}

// exitedSlot reports whether slot i belongs to an exited thread.
func (s *stubProcess) exitedSlot(i int) bool {
	for _, c := range s.exited {
		if c.index == i {
			return true
		}
	}
	return false
}

// forget drops a context whose thread never started. Its slot goes back
// to the stub, remapped when it is next used (its mapping may or may not
// be in place); its control-file unit is freed with the stub, never before:
// a unit freed while still mapped in this stub could be handed to another,
// and a stub that finished meanwhile has freed it already.
func (c *threadContext) forget() {
	s := c.stub
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.threads == nil {
		return
	}
	delete(s.threads, c.index)
	c.remap = true
	s.exited = append(s.exited, c)
}

// frame returns the sentry's pointer into the slot for a stub address the
// handler reported, or nil if it is not inside the slot's signal stack with
// room for size bytes: the value is guest-writable, so it is checked.
func (c *threadContext) frame(stubAddr uint64, size uint64) unsafe.Pointer {
	lo := c.slotVA() + altStackOff
	hi := c.slotVA() + slotSize
	if stubAddr < lo || stubAddr > hi-size {
		return nil
	}
	return unsafe.Add(c.stub.p.ctl.base, c.unit+(stubAddr-c.slotVA()))
}

// Switch implements platform.Context.
func (c *threadContext) Switch(regs *arch.Registers) (platform.Event, error) {
	if err := c.as.flush(urgent); err != nil {
		return platform.Event{}, err
	}
	ctl := c.stub.p.ctl
	uc := c.frame(*ctl.u64(c.unit + tsUcontext), ucSize)
	if uc == nil {
		return platform.Event{}, fmt.Errorf("systrap: thread %d reported a bad ucontext", c.tid)
	}
	*(*[arch.NumSigcontextRegs]uint64)(unsafe.Add(uc, ucMcontext)) = *(*[arch.NumSigcontextRegs]uint64)(unsafe.Pointer(regs))
	if regs.FSBase != c.fs || regs.GSBase != c.gs {
		*ctl.u64(c.unit + tsFSBase) = regs.FSBase
		*ctl.u64(c.unit + tsGSBase) = regs.GSBase
		*c.word(tsFSGSDirty) = 1
	}

	c.running.Store(true)
	if c.interrupted.Swap(false) {
		c.running.Store(false)
		now := rdtsc()
		kernelTime := c.kernelTime(now)
		c.returned = now
		return platform.Event{Kind: platform.EventInterrupt, KernelTime: kernelTime}, nil
	}
	// While the host's CPUs are wanted elsewhere, neither side spins: the
	// handler sleeps as soon as it has trapped (tsPark), and so does the
	// sentry (spinpolicy.go). Otherwise the handler spins for its resume
	// only while no more threads than the host has CPUs wait in Switch:
	// a pair's two sides take turns, so each such pair holds at most one
	// CPU, and more than that many spinning stubs took the CPUs their
	// sentry threads needed (5,000 stat calls shared by ten threads of one
	// process took 42-144 ms on two CPUs, 53-93 with this). Fewer (one
	// pair per two CPUs, as for the sentry's long spin) made each call of
	// a second busy process, a pipe's reader say, wait for a futex wake:
	// a pipe's throughput fell by a third.
	policy := &c.stub.p.spin
	spinning := policy.spinning()
	park, spin := uint32(1), 0
	if spinning {
		spin = guestSpinIters
		n := longSpinners.Add(1)
		if n <= maxLongSpinners.Load() {
			spin = longSpinIters
		}
		if n <= maxSpinningStubs.Load() {
			park = 0
		}
	}
	atomic.StoreUint32(c.word(tsPark), park)
	if !c.cpu.Marked() {
		// The first reading, taken when the thread first parked.
		cpu, ok := c.trapCPUTime()
		c.cpu.Bound(0, cpu, ok)
	}
	busy := c.stub.p.busy
	busy.enter()
	resumed := rdtsc()
	kernelTime := c.kernelTime(resumed)
	c.runningSince.Store(resumed)
	publish(c.word(tsState), threadResume, c.word(tsStubSleeping))
	ok, outcome := wait(c.word(tsState), threadTrapped, c.word(tsSentrySleeping), &c.stub.dead, spin)
	if spinning {
		longSpinners.Add(-1)
	}
	if c.spins.add(outcome) {
		policy.endWindow(c.spins.take())
	}
	busy.leave()
	c.running.Store(false)
	c.runningSince.Store(0)
	c.returned = rdtsc()
	if !ok {
		return platform.Event{}, errStubDead
	}
	times := platform.Event{GuestTime: c.boundedGuestTime(resumed), KernelTime: kernelTime}

	uc = c.frame(*ctl.u64(c.unit + tsUcontext), ucSize)
	si := c.frame(*ctl.u64(c.unit + tsSiginfo), siSize)
	if uc == nil || si == nil {
		return platform.Event{}, fmt.Errorf("systrap: thread %d reported a bad signal frame", c.tid)
	}
	*(*[arch.NumSigcontextRegs]uint64)(unsafe.Pointer(regs)) = *(*[arch.NumSigcontextRegs]uint64)(unsafe.Add(uc, ucMcontext))
	c.fs = *ctl.u64(c.unit + tsFSBase)
	c.gs = *ctl.u64(c.unit + tsGSBase)
	regs.FSBase, regs.GSBase = c.fs, c.gs

	signo := int32(atomic.LoadUint32(c.word(tsSigno)))
	code := *(*int32)(unsafe.Add(si, siCode))
	switch {
	case signo == int32(unix.SIGSYS) && code == sysSeccomp:
		if call := *(*uint64)(unsafe.Add(si, siAddr)); call&^(vsyscallSize-1) == vsyscallVA {
			return vsyscallFault(regs, call, times), nil
		}
		// The seccomp trap rolled rax back to the whole number the guest
		// passed (si_syscall has only its low 32 bits), as Linux's
		// orig_rax keeps it.
		regs.OrigRax = regs.Rax
		times.Kind = platform.EventSyscall
		return times, nil
	case signo == int32(kickSignal):
		c.interrupted.Store(false)
		times.Kind = platform.EventInterrupt
		return times, nil
	}
	ev := times
	ev.Kind = platform.EventFault
	ev.Signo = signo
	ev.Code = code
	ev.Addr = uintptr(*(*uint64)(unsafe.Add(si, siAddr)))
	ev.Trapno = *(*uint64)(unsafe.Add(uc, mcTrapno))
	ev.ErrorCode = *(*uint64)(unsafe.Add(uc, mcErr))
	if signo == int32(unix.SIGSEGV) {
		switch {
		case ev.ErrorCode&pfInstruction != 0:
			ev.Access = platform.ProtExec
		case ev.ErrorCode&pfWrite != 0:
			ev.Access = platform.ProtWrite
		default:
			ev.Access = platform.ProtRead
		}
	}
	return ev, nil
}

// The legacy vsyscall page, where a host in vsyscall=xonly or emulate mode
// emulates a call to gettimeofday, time or getcpu: it runs the seccomp
// filter, whose trap reports the page's address as si_call_addr, with the
// return already simulated (rip the caller's, rsp past the return address).
const (
	vsyscallVA   = 0xffffffffff600000
	vsyscallSize = 4096
)

// vsyscallFault is the event for a guest call into the vsyscall page,
// which moat does not map (its /proc/self/maps has no [vsyscall] line, as
// under Linux's vsyscall=none): the instruction fetch at the page faults,
// as it would on such a kernel, whatever mode the host runs in. The
// registers are put back as they were at the fetch: rip the entry point
// and the return address still on the stack.
func vsyscallFault(regs *arch.Registers, call uint64, times platform.Event) platform.Event {
	regs.Rip = call
	regs.Rsp -= 8
	ev := times
	ev.Kind = platform.EventFault
	ev.Signo = int32(unix.SIGSEGV)
	ev.Code = 1 // SEGV_MAPERR
	ev.Addr = uintptr(call)
	ev.Access = platform.ProtExec
	ev.Trapno = 14                        // #PF
	ev.ErrorCode = pfUser | pfInstruction // a user-mode fetch from an unmapped page
	return ev
}

// The kernel's fpstate: an FXSAVE area whose bytes 464..511 (struct
// _fpx_sw_bytes) describe the extended state that follows: magic1 (u32),
// the frame's extended size (u32), the features saved (u64), the XSAVE
// size (u32).
const (
	fxsaveSize   = 512
	swBytesOff   = 464
	fpXstateMag1 = 0x46505853
	mcFpstate    = ucMcontext + 23*8
)

// FPState implements platform.Context: it is the fpstate the kernel saved
// on the slot's signal stack at the last trap, which rt_sigreturn restores.
func (c *threadContext) FPState() []byte {
	ctl := c.stub.p.ctl
	uc := c.frame(*ctl.u64(c.unit + tsUcontext), ucSize)
	if uc == nil {
		return nil
	}
	fpAddr := *(*uint64)(unsafe.Add(uc, mcFpstate))
	fp := c.frame(fpAddr, fxsaveSize)
	if fp == nil {
		return nil
	}
	size := uint64(fxsaveSize)
	sw := unsafe.Add(fp, swBytesOff)
	if *(*uint32)(sw) == fpXstateMag1 {
		if xsize := uint64(*(*uint32)(unsafe.Add(sw, 16))); xsize > size { // xstate_size
			size = xsize
		}
	}
	p := c.frame(fpAddr, size)
	if p == nil {
		return nil
	}
	return unsafe.Slice((*byte)(p), size)
}

// Interrupt implements platform.Context. A thread in the sentry is not
// kicked: its next Switch returns at once instead.
func (c *threadContext) Interrupt() {
	c.interrupted.Store(true)
	if c.running.Load() {
		unix.Tgkill(c.stub.pid, c.tid, kickSignal)
	}
}

// Park implements platform.Context: the handler, if it is still spinning,
// goes to sleep on the state word.
func (c *threadContext) Park() {
	if c.parked == 0 {
		c.parked = rdtsc()
	}
	atomic.StoreUint32(c.word(tsPark), 1)
}

// kernelTime is how long the kernel worked since the last Switch returned:
// until now (TSC now), or until it parked the thread.
func (c *threadContext) kernelTime(now uint64) time.Duration {
	end := now
	if c.parked != 0 {
		end, c.parked = c.parked, 0
	}
	if c.returned == 0 || end < c.returned {
		return 0
	}
	return ticksToDuration(end - c.returned)
}

// guestTime is how long the guest ran in the Switch that resumed it at
// TSC resumed: from the handler's return to its next entry, as the stub
// recorded them. The stub's page is the guest's to write, so only times
// within the Switch count.
func (c *threadContext) guestTime(resumed uint64) time.Duration {
	from, to := *c.stub.p.ctl.u64(c.unit + tsResumeTSC), *c.stub.p.ctl.u64(c.unit + tsTrapTSC)
	if from < resumed || to < from || to > c.returned {
		return 0
	}
	return ticksToDuration(to - from)
}

// trapCPUTime returns the thread's host CPU clock (ns) as the handler read
// it at its last entry, if it read it then (after a run longer than
// platform.RunningVouched, or at the thread's first entry).
func (c *threadContext) trapCPUTime() (uint64, bool) {
	ts := (*unix.Timespec)(unsafe.Pointer(c.stub.p.ctl.u64(c.unit + tsCPUTime)))
	if ts.Sec < 0 || ts.Nsec < 0 || ts.Nsec >= 1e9 {
		return 0, false
	}
	return uint64(ts.Sec)*1e9 + uint64(ts.Nsec), true
}

// boundedGuestTime is guestTime bounded by the host's CPU clock of the
// stub thread, when the handler read it (platform.HostCPUBound). The
// stub's page is the guest's to write: a forged reading can only lower the
// guest's own count, as a forged TSC mark already could (RLIMIT_CPU then
// undercounts; the host cgroup holds the sandbox's CPU limit).
func (c *threadContext) boundedGuestTime(resumed uint64) time.Duration {
	cpu, ok := c.trapCPUTime()
	return c.cpu.Bound(c.guestTime(resumed), cpu, ok)
}

// Running implements platform.Context. It counts as guestTime will, from
// the stub's own marks, so that the wait for a stub to wake (long on a
// loaded host) is not counted as the guest's: nothing before the stub
// resumed the guest, and once it has trapped, up to the trap.
func (c *threadContext) Running() time.Duration {
	since := c.runningSince.Load()
	if since == 0 {
		return 0
	}
	ctl := c.stub.p.ctl
	from := atomic.LoadUint64(ctl.u64(c.unit + tsResumeTSC))
	to := atomic.LoadUint64(ctl.u64(c.unit + tsTrapTSC))
	switch now := rdtsc(); {
	case from < since || from > now:
		return 0
	case to >= from && to <= now:
		return ticksToDuration(to - from)
	default:
		return ticksToDuration(now - from)
	}
}

// Release implements platform.Context: the thread is resumed at the stub's
// exit code and its slot is kept for the stub's next thread, which may start
// once the kernel reports this one gone (takeSlot). Nothing here waits: a
// process that exits releases its last thread and then its address space,
// whose stub is killed anyway.
func (c *threadContext) Release() {
	s := c.stub
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.dead.Load() || s.threads[c.index] != c {
		return // destroy frees the slot with the stub
	}
	delete(s.threads, c.index)
	s.exited = append(s.exited, c)
	c.sendToExit()
}

// sendToExit resumes the trapped thread at the stub's thread exit code.
func (c *threadContext) sendToExit() {
	const ripIndex = 16
	uc := c.frame(*c.stub.p.ctl.u64(c.unit + tsUcontext), ucSize)
	if uc == nil {
		return // a guest-corrupted slot: the thread stays parked until the stub dies
	}
	*(*uint64)(unsafe.Add(uc, ucMcontext+ripIndex*8)) = codeVA + c.stub.p.entries.threadExit
	atomic.StoreUint32(c.word(tsPark), 0)
	publish(c.word(tsState), threadResume, c.word(tsStubSleeping))
}
