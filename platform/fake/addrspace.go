package fake

import (
	"sort"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/platform"
)

const pageSize = 4096

// segment is a run of pages mapped from one contiguous range of the
// memory file with one protection: [start, end) at file offset off.
type segment struct {
	start, end uintptr
	off        uint64
	prot       platform.Prot
}

// Calls counts what the kernel asked of an address space.
type Calls struct {
	Maps, Unmaps, Protects, Syncs, Contexts int
	// EmptyMaps are maps of no bytes, which the host's mmap refuses.
	EmptyMaps int
}

// AddressSpace implements platform.AddressSpace: the mappings are applied
// at once, so Sync has nothing left to do.
type AddressSpace struct {
	p *Platform

	mu       sync.Mutex
	segs     []segment // sorted, not overlapping
	calls    Calls
	contexts []*Context
	released bool

	killOnce sync.Once
	killed   chan struct{}
}

var _ platform.AddressSpace = (*AddressSpace)(nil)

// MapFile implements platform.AddressSpace.
func (a *AddressSpace) MapFile(addr uintptr, off uint64, length uintptr, prot platform.Prot) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.calls.Maps++
	if length == 0 {
		a.calls.EmptyMaps++
		return unix.EINVAL
	}
	if addr%pageSize != 0 || off%pageSize != 0 || addr+length > MaxUserAddress || addr+length < addr {
		return unix.EINVAL
	}
	end := addr + roundUp(length)
	a.removeLocked(addr, end)
	a.insertLocked(segment{addr, end, off, prot})
	return nil
}

// Unmap implements platform.AddressSpace.
func (a *AddressSpace) Unmap(addr, length uintptr) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.calls.Unmaps++
	a.removeLocked(addr, addr+roundUp(length))
	return nil
}

// Protect implements platform.AddressSpace.
func (a *AddressSpace) Protect(addr, length uintptr, prot platform.Prot) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.calls.Protects++
	end := addr + roundUp(length)
	a.splitLocked(addr)
	a.splitLocked(end)
	for i := range a.segs {
		if s := &a.segs[i]; s.start >= addr && s.end <= end {
			s.prot = prot
		}
	}
	return nil
}

// Sync implements platform.AddressSpace.
func (a *AddressSpace) Sync() error {
	a.mu.Lock()
	a.calls.Syncs++
	a.mu.Unlock()
	return nil
}

// NewContext implements platform.AddressSpace.
func (a *AddressSpace) NewContext() (platform.Context, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.released {
		return nil, unix.ESRCH
	}
	a.calls.Contexts++
	c := newContext(a)
	a.contexts = append(a.contexts, c)
	return c, nil
}

// Kill implements platform.AddressSpace.
func (a *AddressSpace) Kill() { a.killOnce.Do(func() { close(a.killed) }) }

// Release implements platform.AddressSpace.
func (a *AddressSpace) Release() {
	a.Kill()
	a.mu.Lock()
	a.released = true
	contexts := a.contexts
	a.segs = nil
	a.mu.Unlock()
	for _, c := range contexts {
		c.Release()
	}
}

// Calls returns what the kernel has asked of the address space so far.
func (a *AddressSpace) Calls() Calls {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.calls
}

// Released reports whether the kernel released the address space.
func (a *AddressSpace) Released() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.released
}

// Mapping returns the memory-file offset and protection addr is mapped
// with, as the host's page tables would have them.
func (a *AddressSpace) Mapping(addr uintptr) (off uint64, prot platform.Prot, ok bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	i := a.findLocked(addr)
	if i < 0 {
		return 0, 0, false
	}
	s := a.segs[i]
	return s.off + uint64(addr-s.start), s.prot, true
}

// Mapped returns the number of bytes mapped.
func (a *AddressSpace) Mapped() uintptr {
	a.mu.Lock()
	defer a.mu.Unlock()
	var n uintptr
	for _, s := range a.segs {
		n += s.end - s.start
	}
	return n
}

// findLocked returns the index of the segment holding addr, or -1.
func (a *AddressSpace) findLocked(addr uintptr) int {
	i := sort.Search(len(a.segs), func(i int) bool { return a.segs[i].end > addr })
	if i < len(a.segs) && a.segs[i].start <= addr {
		return i
	}
	return -1
}

// splitLocked makes addr a segment boundary.
func (a *AddressSpace) splitLocked(addr uintptr) {
	i := a.findLocked(addr)
	if i < 0 || a.segs[i].start == addr {
		return
	}
	s := a.segs[i]
	lo, hi := s, s
	lo.end = addr
	hi.start, hi.off = addr, s.off+uint64(addr-s.start)
	a.segs = append(a.segs[:i], append([]segment{lo, hi}, a.segs[i+1:]...)...)
}

// removeLocked unmaps [start, end).
func (a *AddressSpace) removeLocked(start, end uintptr) {
	a.splitLocked(start)
	a.splitLocked(end)
	kept := a.segs[:0]
	for _, s := range a.segs {
		if s.end <= start || s.start >= end {
			kept = append(kept, s)
		}
	}
	a.segs = kept
}

// insertLocked adds s, which overlaps nothing.
func (a *AddressSpace) insertLocked(s segment) {
	i := sort.Search(len(a.segs), func(i int) bool { return a.segs[i].start >= s.end })
	a.segs = append(a.segs, segment{})
	copy(a.segs[i+1:], a.segs[i:])
	a.segs[i] = s
}

func roundUp(n uintptr) uintptr { return (n + pageSize - 1) &^ (pageSize - 1) }
