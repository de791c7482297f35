package systrap

import (
	"encoding/binary"
	"fmt"
	"os"
	"slices"
	"time"

	"golang.org/x/sys/unix"
)

// Offsets of the entry points in the stub's code, from its header.
type stubEntries struct {
	firstInit, handler, restorer, threadExit uint64
}

const stubMagic = 0x6d6f6174 // "moat"

func readStubEntries() (stubEntries, error) {
	le := binary.LittleEndian
	if len(stubCode) < 20 || le.Uint32(stubCode[16:]) != stubMagic {
		return stubEntries{}, fmt.Errorf("systrap: stub code is malformed")
	}
	return stubEntries{
		firstInit:  uint64(le.Uint32(stubCode[0:])),
		handler:    uint64(le.Uint32(stubCode[4:])),
		restorer:   uint64(le.Uint32(stubCode[8:])),
		threadExit: uint64(le.Uint32(stubCode[12:])),
	}, nil
}

// kickSignal interrupts a guest thread running guest code.
const kickSignal = unix.SIGUSR2

// handledSignals are the host signals the stub's handler turns into events.
var handledSignals = []unix.Signal{
	unix.SIGSYS, unix.SIGSEGV, unix.SIGBUS, unix.SIGFPE, unix.SIGILL, unix.SIGTRAP, kickSignal,
}

// Spin budgets before the stub sleeps on a futex. A hand-off that arrives
// within the budget costs no system call; one futex wake costs about 15
// round trips, so spinning is worth tens of microseconds. Not more: a
// spinning stub holds a CPU the sentry or another guest thread may need
// (this machine has two), and a call that blocks parks the stub at once
// (Context.Park). The budgets become PAUSE counts in calibrateSpin.
const (
	handlerSpinTime = 50 * time.Microsecond
	sysSpinTime     = 50 * time.Microsecond
)

// writeParams fills the parameters page that every stub maps read-only.
func (p *Platform) writeParams() error {
	e, err := readStubEntries()
	if err != nil {
		return err
	}
	le := binary.LittleEndian
	b := p.ctl.mem[paramsOff : paramsOff+paramSize]
	le.PutUint32(b[parCtlFD:], uint32(p.ctl.fd))
	le.PutUint32(b[parMemFD:], uint32(p.memFD))
	keep := []int{p.ctl.fd, p.memFD, p.fds.stubEnd}
	slices.Sort(keep)
	if keep[0] == keep[1] || keep[1] == keep[2] {
		return fmt.Errorf("systrap: the stubs' descriptors %v are not distinct", keep)
	}
	for i, fd := range keep {
		le.PutUint32(b[parKeepFDs+4*i:], uint32(fd))
	}

	sysProg, guestProg := syscallThreadFilter(p.fds.stubEnd), guestThreadFilter()
	if parSysFilter+len(sysProg)*8 > parGuestFilter || parGuestFilter+len(guestProg)*8 > paramSize {
		return fmt.Errorf("systrap: seccomp filters do not fit the parameters page")
	}
	encodeFilter(b[parSysFilter:], sysProg)
	encodeFilter(b[parGuestFilter:], guestProg)
	putFprog(b[parSysFprog:], len(sysProg), paramsVA+parSysFilter)
	putFprog(b[parGuestFprog:], len(guestProg), paramsVA+parGuestFilter)

	var unblocked uint64
	for _, s := range handledSignals {
		unblocked |= 1 << (uint(s) - 1)
	}
	le.PutUint64(b[parGuestMask:], ^unblocked)
	le.PutUint32(b[parPPID:], uint32(os.Getpid()))
	le.PutUint32(b[parHandlerSpin:], uint32(spinIters(handlerSpinTime)))
	le.PutUint32(b[parSysSpin:], uint32(spinIters(sysSpinTime)))
	le.PutUint64(b[parYieldSlow:], yieldSlowTicks)
	le.PutUint64(b[parCPUCheck:], cpuCheckTicks)

	// struct kernel_sigaction: handler, flags, restorer, mask.
	sa := b[parSigaction:]
	le.PutUint64(sa[0:], codeVA+e.handler)
	le.PutUint64(sa[8:], saSiginfo|saOnstack|saRestorer)
	le.PutUint64(sa[16:], codeVA+e.restorer)
	le.PutUint64(sa[24:], ^uint64(0)) // nothing interrupts the handler

	le.PutUint32(b[parNumSignals:], uint32(len(handledSignals)))
	for i, s := range handledSignals {
		le.PutUint32(b[parSignals+4*i:], uint32(s))
	}
	p.entries = e
	return nil
}

// putFprog writes a struct sock_fprog.
func putFprog(b []byte, n int, filterVA uint64) {
	binary.LittleEndian.PutUint16(b[0:], uint16(n))
	binary.LittleEndian.PutUint64(b[8:], filterVA)
}
