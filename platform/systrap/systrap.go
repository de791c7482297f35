// Package systrap runs guest code in stub processes and traps every guest
// system call with seccomp (SECCOMP_RET_TRAP), so that no guest call ever
// reaches the host kernel. It is the only package that creates, maps into or
// talks to stub processes.
//
// How it works, in one paragraph: a stub is a host process whose address
// space holds only the stub region (layout.go) and the guest's mappings. Each
// guest thread runs on its own stub thread. When a guest thread makes a system
// call or faults, the stub's signal handler publishes the saved registers'
// address in the thread's slot and waits; the sentry, spinning briefly before
// any futex sleep, reads and rewrites the registers in place and lets the
// handler return. Address-space changes are executed by the stub's syscall
// thread, which reads requests from a page it can only read.
package systrap

import (
	"fmt"
	"runtime"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/platform"
)

// Platform is the systrap platform of one sandbox.
type Platform struct {
	ctl     *controlFile
	memFD   int
	source  *stubProcess // never runs guest code: new stubs are cloned from it
	reaper  *reaper
	pool    stubPool
	entries stubEntries
	busy    *busyGauge
	spin    spinPolicy // whether hand-offs spin now
	fds     hostFDSocket
	// hostFiles names the host files behind memory-file offsets
	// (hostfds.go); nil until the kernel asks for them. The source stub's
	// descriptors of them are srcFDs, under srcMu, unless srcBroken; a
	// stub holds at most maxStubFDs descriptors (its RLIMIT_NOFILE, less
	// a margin).
	hostFiles  platform.HostFiles
	srcMu      sync.Mutex
	srcFDs     stubFDs
	srcBroken  bool
	maxStubFDs int
}

var _ platform.Platform = (*Platform)(nil)

// New starts the platform for guest memory held in the memory file memFD.
// It must run before the sentry confines itself: the first stub is a fork of
// the sentry.
func New(memFD int) (*Platform, error) {
	calibrateOnce.Do(calibrateSpin)
	if err := checkHost(); err != nil {
		return nil, err
	}
	ctl, err := newControlFile()
	if err != nil {
		return nil, err
	}
	p := &Platform{ctl: ctl, memFD: memFD, maxStubFDs: maxStubFDs()}
	if err := p.fds.open(); err != nil {
		ctl.close()
		return nil, err
	}
	if err := p.writeParams(); err != nil {
		p.fds.close()
		ctl.close()
		return nil, err
	}
	p.busy = newBusyGauge(ctl.u32(paramsOff + parGuestBusy))
	src, err := p.forkSourceStub()
	if err != nil {
		p.fds.close()
		ctl.close()
		return nil, err
	}
	p.source = src
	p.srcFDs = p.freshFDs()
	p.startPool()
	return p, nil
}

// maxStubFDs is how many descriptors a stub may hold: its descriptor
// limit (the sentry's, which it inherits), less a margin.
func maxStubFDs() int {
	var lim unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &lim); err != nil || lim.Cur < 64 {
		return 32
	}
	return int(min(lim.Cur, 1<<20)) - 16
}

// checkHost refuses hosts without what the stub relies on.
func checkHost() error {
	if runtime.GOARCH != "amd64" {
		return fmt.Errorf("systrap: unsupported architecture %s", runtime.GOARCH)
	}
	// The handler saves and restores FS and GS with rdfsbase/wrfsbase.
	const hwcap2FSGSBase = 1 << 1
	// The vector the kernel gave the process, which the runtime keeps: a
	// confined sentry cannot read /proc/self/auxv.
	auxv, err := unix.Auxv()
	if err == nil && !hasAuxvBit(auxv, atHWCAP2, hwcap2FSGSBase) {
		return fmt.Errorf("systrap: the host CPU or kernel does not allow FSGSBASE instructions in user space (Linux >= 5.9 needed)")
	}
	return nil
}

// hasAuxvBit reports whether auxv entry key has bit set.
func hasAuxvBit(auxv [][2]uintptr, key, bit uintptr) bool {
	for _, e := range auxv {
		if e[0] == key {
			return e[1]&bit != 0
		}
	}
	return false
}

// MaxUserAddress implements platform.Platform.
func (p *Platform) MaxUserAddress() uintptr { return MaxGuestAddr }

// NewAddressSpace implements platform.Platform: a stub made ahead of need
// (pool.go), or a fresh one.
func (p *Platform) NewAddressSpace() (platform.AddressSpace, error) {
	if as := p.pool.take(); as != nil {
		return as, nil
	}
	return p.newAddressSpace(urgent)
}

// newAddressSpace clones a fresh stub from the source stub, with its first
// thread parked.
func (p *Platform) newAddressSpace(u urgency) (*addressSpace, error) {
	var stub *stubProcess
	fds, err := p.cloneFDs(func() (err error) {
		stub, err = p.newStub(u)
		return err
	})
	if err != nil {
		return nil, err
	}
	as := &addressSpace{p: p, stub: stub, fds: fds}
	as.spareMade.L = &as.spareMu
	if as.spare, err = as.startThread(u); err != nil {
		as.Release()
		return nil, err
	}
	return as, nil
}
