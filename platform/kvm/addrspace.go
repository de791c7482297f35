package kvm

import (
	"errors"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/platform"
)

// addressSpace is a guest address space: its page tables, and the threads
// (contexts) running in it.
//
// Changes go into the page tables at once. A change that takes access away
// bumps gen: every vCPU entering the guest compares the generation it last
// ran with and flushes its TLB if it moved; vCPUs running meanwhile are
// kicked out of the guest (a shootdown) at the next Sync or Switch of the
// address space, which waits until each has left the guest once.
type addressSpace struct {
	p *Platform

	mu       sync.Mutex
	pt       *pageTables
	contexts map[*context]struct{}
	released bool

	// shootdown says access was taken away since the last shootdown.
	shootdown atomic.Bool
	gen       atomic.Uint64
	dead      atomic.Bool
}

var _ platform.AddressSpace = (*addressSpace)(nil)

var errKilled = errors.New("kvm: the address space was killed")

func checkRange(addr, length uintptr) error {
	if end := addr + length; end < addr || end > MaxUserAddress || addr%pageSize != 0 || length%pageSize != 0 {
		return unix.EINVAL
	}
	return nil
}

// MapFile implements platform.AddressSpace.
func (as *addressSpace) MapFile(addr uintptr, off uint64, length uintptr, prot platform.Prot) error {
	if err := checkRange(addr, length); err != nil {
		return err
	}
	if err := as.p.mem.ensure(off, uint64(length)); err != nil {
		return err
	}
	as.mu.Lock()
	defer as.mu.Unlock()
	if as.released {
		return errKilled
	}
	reduced, err := as.pt.mapRange(uint64(addr), off, uint64(length), prot)
	if reduced {
		as.reducedLocked()
	}
	return err
}

// Unmap implements platform.AddressSpace.
func (as *addressSpace) Unmap(addr, length uintptr) error {
	if err := checkRange(addr, length); err != nil {
		return err
	}
	as.mu.Lock()
	defer as.mu.Unlock()
	if as.released {
		return nil
	}
	reduced, err := as.pt.unmapRange(uint64(addr), uint64(length))
	if reduced {
		as.reducedLocked()
	}
	return err
}

// Protect implements platform.AddressSpace.
func (as *addressSpace) Protect(addr, length uintptr, prot platform.Prot) error {
	if err := checkRange(addr, length); err != nil {
		return err
	}
	as.mu.Lock()
	defer as.mu.Unlock()
	if as.released {
		return nil
	}
	reduced, err := as.pt.protectRange(uint64(addr), uint64(length), prot)
	if reduced {
		as.reducedLocked()
	}
	return err
}

func (as *addressSpace) reducedLocked() {
	as.gen.Add(1)
	as.shootdown.Store(true)
}

// Sync implements platform.AddressSpace.
func (as *addressSpace) Sync() error {
	as.flush(nil)
	return nil
}

// flush makes every context but self that is in the guest leave it once
// if access was taken away since the last time: each then enters again
// with the current tables and its TLB flushed. The tables taken out of
// the tree before go back to the platform then.
func (as *addressSpace) flush(self *context) {
	if !as.shootdown.Load() {
		return
	}
	as.mu.Lock()
	if !as.shootdown.Swap(false) {
		as.mu.Unlock()
		return
	}
	type target struct {
		c     *context
		exits uint64
	}
	var targets []target
	for c := range as.contexts {
		if c != self && c.running.Load() {
			targets = append(targets, target{c, c.exits.Load()})
		}
	}
	retired := as.pt.takeRetired()
	as.mu.Unlock()
	for _, t := range targets {
		t.c.kick()
	}
	for _, t := range targets {
		for i := 0; t.c.running.Load() && t.c.exits.Load() == t.exits; i++ {
			if i < 100 {
				runtime.Gosched()
			} else {
				time.Sleep(10 * time.Microsecond)
			}
		}
	}
	as.p.retire(retired)
}

// load returns the CR3 of the address space's current tables for a vCPU
// about to enter the guest, which from now on may see them.
func (as *addressSpace) load() uint64 {
	as.mu.Lock()
	defer as.mu.Unlock()
	as.pt.publish()
	return as.pt.root
}

// syscallOpcode is the syscall instruction (0f 05), little-endian.
const syscallOpcode = 0x050f

// syscallBefore reports whether the two bytes before addr in the address
// space are a syscall instruction.
func (as *addressSpace) syscallBefore(addr uint64) bool {
	lo, ok1 := as.readByte(addr - 2)
	hi, ok2 := as.readByte(addr - 1)
	return ok1 && ok2 && uint16(lo)|uint16(hi)<<8 == syscallOpcode
}

// readByte reads the guest's byte at addr, if it is mapped executable.
func (as *addressSpace) readByte(addr uint64) (byte, bool) {
	if addr >= MaxUserAddress {
		return 0, false
	}
	as.mu.Lock()
	e := as.pt.translate(addr)
	as.mu.Unlock()
	if e&ptePresent == 0 || e&pteNX != 0 {
		return 0, false
	}
	return as.p.mem.byteAt(e&pteAddr | addr&(pageSize-1))
}

// NewContext implements platform.AddressSpace.
func (as *addressSpace) NewContext() (platform.Context, error) {
	v, err := as.p.getVCPU()
	if err != nil {
		return nil, err
	}
	c := &context{as: as, v: v}
	as.mu.Lock()
	defer as.mu.Unlock()
	if as.released {
		as.p.putVCPU(v)
		return nil, errKilled
	}
	as.contexts[c] = struct{}{}
	return c, nil
}

// Kill implements platform.AddressSpace: every context leaves the guest
// and its Switch fails.
func (as *addressSpace) Kill() {
	as.dead.Store(true)
	as.mu.Lock()
	var running []*context
	for c := range as.contexts {
		if c.running.Load() {
			running = append(running, c)
		}
	}
	as.mu.Unlock()
	for _, c := range running {
		c.kick()
	}
}

// Release implements platform.AddressSpace: its contexts end, and its page
// tables go back to the platform once none is in the guest.
func (as *addressSpace) Release() {
	as.dead.Store(true)
	as.mu.Lock()
	if as.released {
		as.mu.Unlock()
		return
	}
	as.released = true
	contexts := as.contexts
	as.contexts = nil
	as.mu.Unlock()
	for c := range contexts {
		c.end()
	}
	as.pt.release(511)
	as.p.retire(as.pt.takeRetired())
}
