package mm

import (
	"slices"

	"github.com/moat-sandbox/moat/platform"
)

// cowChunk is how much a write fault on a copy-on-write page copies at
// once: the pages around it are likely written next, and each fault costs a
// trap and a host mapping.
const cowChunk = 16 * PageSize

// Stack pages around the forking thread's stack pointer are copied at fork
// rather than shared copy-on-write: parent and child both write there at
// once (the return from fork), and each write fault costs a trap and a
// host request, tens of microseconds, against a microsecond of copying.
const (
	forkCopyBelowSP = 4 * PageSize
	forkCopyAboveSP = 12 * PageSize
)

// Fork returns a copy of m in address space as, as fork(2) makes it: private
// pages are shared copy-on-write by both, shared mappings stay shared;
// private writable pages near sp (the forking thread's stack pointer) and
// where earlier children wrote are copied. Locks are not inherited, seals are.
func (m *MemoryManager) Fork(as platform.AddressSpace, sp uintptr) *MemoryManager {
	m.mu.Lock()
	defer m.mu.Unlock()
	c := &MemoryManager{mf: m.mf, as: as, maxAddr: m.maxAddr, mmapBase: m.mmapBase, brkBase: m.brkBase, brk: m.brk,
		users: 1, Layout: m.Layout, parent: m, anySealed: m.anySealed}
	c.membarrier.Store(m.membarrier.Load())
	c.vmas.s = append([]vma(nil), m.vmas.s...)
	for k := range c.vmas.s {
		c.vmas.s[k].locked, c.vmas.s[k].onFault = false, false
	}
	track(c.vmas.s, 1)
	copies := m.forkCopyRangesLocked(sp)
	for _, r := range copies {
		m.pmas.isolate(r.lo, r.hi)
	}
	c.pmas.s = make([]pma, len(m.pmas.s))
	vi := 0
	for k := range m.pmas.s {
		p := &m.pmas.s[k]
		for m.vmas.s[vi].end <= p.start {
			vi++
		}
		v := &m.vmas.s[vi]
		if !p.pastEOF && slices.ContainsFunc(copies, func(r addrRange) bool { return p.start >= r.lo && p.end <= r.hi }) {
			// Short of memory, it is shared copy-on-write instead.
			if off, err := m.copyPagesLocked(p); err == nil {
				cp := *p
				cp.off, cp.cow = off, false
				c.pmas.s[k] = cp
				as.MapFile(cp.start, cp.off, cp.length(), hostProt(v, &cp))
				continue
			}
		}
		m.mf.IncRef(p.off, uint64(p.length()))
		if !v.shared && !p.cow {
			p.cow = true
			if v.prot&platform.ProtWrite != 0 {
				m.hostProtect(v, p)
			}
		}
		c.pmas.s[k] = *p
		as.MapFile(p.start, p.off, p.length(), hostProt(v, p))
	}
	return c
}

// addrRange is the address range [lo, hi).
type addrRange struct{ lo, hi uintptr }

// forkCopyRangesLocked returns the ranges whose pages Fork copies: those
// around sp, [sp-forkCopyBelowSP, sp+forkCopyAboveSP), and the chunks of
// the pages earlier children wrote (childWrites), each cut to its mapping
// if that is private and writable.
func (m *MemoryManager) forkCopyRangesLocked(sp uintptr) []addrRange {
	var out []addrRange
	add := func(addr, lo, hi uintptr) {
		v, ok := m.vmas.lookup(addr)
		if ok && !v.shared && v.prot&platform.ProtWrite != 0 && max(lo, v.start) < min(hi, v.end) {
			out = append(out, addrRange{max(lo, v.start), min(hi, v.end)})
		}
	}
	down := pageRoundDown(sp)
	add(sp, down-min(forkCopyBelowSP, down), down+forkCopyAboveSP)
	for _, page := range m.childWrites {
		chunk := page &^ (cowChunk - 1)
		add(page, chunk, chunk+cowChunk)
	}
	return out
}

// maxLearnedChunks bounds how much a fork copies on what its children
// wrote: 8 chunks of 16 pages.
const maxLearnedChunks = 8

// noteCowWriteLocked records that the guest wrote the copy-on-write page
// at page, for the parent's next fork (which copies its chunk).
func (m *MemoryManager) noteCowWriteLocked(page uintptr) {
	if m.parent != nil && len(m.cowWrites) < maxLearnedChunks {
		m.cowWrites = append(m.cowWrites, page)
	}
}

// tellParent hands the pages this memory manager wrote copy-on-write to
// the one it was forked from, whose next forks copy their chunks at once.
// The parent keeps what children wrote, the most recent maxLearnedChunks
// chunks: a child that wrote nothing copy-on-write may owe it to the
// copies its fork made. It is called once, when the last user is gone
// (exit or exec), without m.mu.
func (m *MemoryManager) tellParent() {
	p := m.parent
	m.parent = nil
	if p == nil || len(m.cowWrites) == 0 {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, page := range m.cowWrites {
		p.childWrites = slices.DeleteFunc(p.childWrites, func(q uintptr) bool { return q == page })
		if len(p.childWrites) == maxLearnedChunks {
			p.childWrites = p.childWrites[1:]
		}
		p.childWrites = append(p.childWrites, page)
	}
}

// copyPagesLocked copies p's pages into fresh ones and returns where they
// are in the memory file.
func (m *MemoryManager) copyPagesLocked(p *pma) (uint64, error) {
	n := uint64(p.length())
	off, err := m.mf.Allocate(n)
	if err != nil {
		return 0, err
	}
	copy(m.mf.Slice(off, n), m.mf.Slice(p.off, n))
	return off, nil
}

// Fault is what a guest fault comes to.
type Fault int

// Fault verdicts.
const (
	FaultHandled Fault = iota // the guest may go on
	FaultSEGV                 // the access breaks the mappings' rules: SIGSEGV
	FaultBus                  // the page is past the end of its file: SIGBUS
)

// HandleFault serves a fault at addr for access: a page of a lazy
// mapping is backed, a write to a copy-on-write page is copied, and the
// guest goes on; other faults are the guest's, and it gets a signal.
func (m *MemoryManager) HandleFault(addr uintptr, access platform.Prot) Fault {
	m.mu.Lock()
	defer m.mu.Unlock()
	v, ok := m.vmas.lookup(addr)
	if !ok {
		if m.growStackLocked(addr) {
			return FaultHandled
		}
		return FaultSEGV
	}
	allowed := v.prot
	if allowed&(platform.ProtWrite|platform.ProtExec) != 0 {
		allowed |= platform.ProtRead // x86 cannot take read away from these
	}
	if access&^allowed != 0 {
		return FaultSEGV
	}
	p, ok := m.pmas.lookup(addr)
	if !ok && v.lazy() {
		m.fillFaultLocked(v, addr)
		if p, ok = m.pmas.lookup(addr); !ok {
			return FaultBus // past the file's end, or no memory for it
		}
		if access&platform.ProtWrite == 0 || !p.cow {
			return FaultHandled // mapped on the host as it was backed
		}
	}
	if !ok {
		return FaultSEGV
	}
	if p.pastEOF {
		return FaultBus
	}
	if access&platform.ProtWrite != 0 && p.cow {
		lo := max(pageRoundDown(addr)&^(cowChunk-1), v.start, p.start)
		hi := min((pageRoundDown(addr)&^(cowChunk-1))+cowChunk, v.end, p.end)
		if m.mf.Exclusive(p.off, uint64(p.length())) {
			// No one else holds these pages any more (the child that
			// shared them exec'd or exited): all of them become writable
			// in one go, not a fault per chunk.
			lo, hi = p.start, p.end
		}
		m.breakCowLocked(lo, hi)
		m.noteCowWriteLocked(pageRoundDown(addr))
		return FaultHandled
	}
	// The access is allowed and the page is not copy-on-write: the host
	// mapping lags behind (another thread changed it a moment ago). Map it
	// again and let the guest retry.
	m.hostMap(v, p)
	return FaultHandled
}

// breakCowLocked gives the copy-on-write pages of [lo, hi) to this address
// space alone: pages no one else holds any more are made writable as they
// are, others are copied.
func (m *MemoryManager) breakCowLocked(lo, hi uintptr) error {
	pi, pj := m.pmas.span(lo, hi)
	needed := false
	for k := pi; k < pj; k++ {
		needed = needed || m.pmas.s[k].cow
	}
	if !needed {
		return nil
	}
	pi, pj = m.pmas.isolate(lo, hi)
	for k := pi; k < pj; k++ {
		p := &m.pmas.s[k]
		if !p.cow {
			continue
		}
		v, _ := m.vmas.lookup(p.start)
		n := uint64(p.length())
		if !m.mf.Exclusive(p.off, n) {
			off, err := m.copyPagesLocked(p)
			if err != nil {
				return err
			}
			m.mf.DecRef(p.off, n)
			p.off = off
		}
		p.cow = false
		m.hostMap(v, p)
	}
	return nil
}
