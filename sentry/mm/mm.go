// Package mm is a guest process's memory: its mappings (vmas), where their
// pages are in the memory file (pmas), and copying between guest addresses
// and the sentry. Every page of a mapping is backed from the moment it is
// mapped (the host allocates memory-file pages only when touched), but for
// the large mappings of files that keep their pages in the memory file and
// long private anonymous mappings, which are backed as they are touched
// (lazy.go); the platform address space mirrors the pmas, so the guest
// takes no fault the sentry must serve but on those and on writing a page
// shared copy-on-write, after a fork or from a file's page cache, which the
// sentry copies then.
// The sentry reads and writes guest memory through its own view of the
// memory file, never through the guest's.
//
// It must never let a mapping reach beyond the platform's MaxUserAddress.
package mm

import (
	"sync"
	"sync/atomic"

	"github.com/moat-sandbox/moat/platform"
	"github.com/moat-sandbox/moat/sentry/memfile"
)

// PageSize is the guest page size.
const PageSize = memfile.PageSize

// MinAddr is the lowest address a mapping may have (Linux's default
// vm.mmap_min_addr).
const MinAddr = 0x10000

// MemoryManager is one guest address space.
type MemoryManager struct {
	mf *memfile.File
	as platform.AddressSpace

	mu         sync.RWMutex
	vmas       vmaSet
	pmas       pmaSet
	maxAddr    uintptr
	mmapBase   uintptr // top-down search for free ranges starts here
	brkBase    uintptr // start of the heap; 0 until the loader sets it
	brk        uintptr // current program break
	lockFuture bool    // mlockall(MCL_FUTURE): new mappings start locked
	anySealed  bool    // some vma is sealed: only then do unmap, mprotect and mremap look

	membarrier atomic.Uint32 // membarrier registrations (membarrier.go)

	users int // tasks using this address space; the last one releases it

	// parent is the memory manager this one was forked from. At the end
	// of its life (exit or exec) this one tells it the pages the guest
	// wrote copy-on-write (cowWrites), and the parent's next fork copies
	// their chunks at once (childWrites): a process that forks again and again
	// (a shell, a fork-loop) has children that write the same pages
	// before they exec, a fault and a host request each.
	parent      *MemoryManager
	cowWrites   []uintptr
	childWrites []uintptr

	// limitAS returns RLIMIT_AS: new mappings must not make the address
	// space larger. Nil means no limit.
	limitAS func() uint64
	// limitStack returns RLIMIT_STACK, how far a stack may grow.
	limitStack func() uint64

	// Layout records where the loader put things.
	Layout Layout
}

// Layout records where the loader put things, for the auxiliary vector and
// /proc.
type Layout struct {
	StackTop        uintptr
	ArgStart        uintptr
	ArgEnd          uintptr
	EnvStart        uintptr
	EnvEnd          uintptr
	AuxvStart       uintptr
	AuxvEnd         uintptr
	ExecutableEntry uintptr
}

// New returns an empty memory manager over address space as, with one user.
// With a nil as, the memory manager gets its address space later (Attach).
func New(mf *memfile.File, as platform.AddressSpace, maxAddr uintptr) *MemoryManager {
	return &MemoryManager{mf: mf, as: as, maxAddr: maxAddr, mmapBase: maxAddr, users: 1}
}

// SetLimitAS sets where RLIMIT_AS comes from.
func (m *MemoryManager) SetLimitAS(limit func() uint64) {
	m.mu.Lock()
	m.limitAS = limit
	m.mu.Unlock()
}

// SetLimitStack sets where RLIMIT_STACK comes from.
func (m *MemoryManager) SetLimitStack(limit func() uint64) {
	m.mu.Lock()
	m.limitStack = limit
	m.mu.Unlock()
}

// growOKLocked reports whether n more bytes of mappings fit RLIMIT_AS.
func (m *MemoryManager) growOKLocked(n uintptr) bool {
	if m.limitAS == nil {
		return true
	}
	limit := m.limitAS()
	var size uint64
	for _, v := range m.vmas.s {
		size += uint64(v.length())
	}
	return size+uint64(n) <= limit
}

// AddressSpace is the platform address space this memory manager drives.
func (m *MemoryManager) AddressSpace() platform.AddressSpace { return m.as }

// MaxAddr is the end of the range the guest may map.
func (m *MemoryManager) MaxAddr() uintptr { return m.maxAddr }

// SetMmapBase sets where searches for free address ranges start (below the
// stack).
func (m *MemoryManager) SetMmapBase(base uintptr) {
	m.mu.Lock()
	m.mmapBase = base
	m.mu.Unlock()
}

// IncUsers adds a user (a thread or a vfork child sharing the memory).
func (m *MemoryManager) IncUsers() {
	m.mu.Lock()
	m.users++
	m.mu.Unlock()
}

// Users is how many tasks use the memory manager.
func (m *MemoryManager) Users() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.users
}

// DecUsers drops a user; the last one frees every page and the address
// space, and DecUsers then reports true.
func (m *MemoryManager) DecUsers() bool {
	m.mu.Lock()
	m.users--
	last := m.users == 0
	if last {
		syncShared(m.vmas.s)
		for _, p := range m.pmas.s {
			m.mf.DecRef(p.off, uint64(p.length()))
		}
		track(m.vmas.s, -1)
		m.pmas.s, m.vmas.s = nil, nil
	}
	m.mu.Unlock()
	if last {
		m.tellParent()
		if m.as != nil {
			m.as.Release()
		}
	}
	return last
}

// Release drops the one user of a memory manager that was never shared.
func (m *MemoryManager) Release() { m.DecUsers() }

func pageRoundDown(a uintptr) uintptr { return a &^ (PageSize - 1) }

// pageRoundUp rounds up; ok is false on overflow.
func pageRoundUp(a uintptr) (uintptr, bool) {
	r := (a + PageSize - 1) &^ (PageSize - 1)
	return r, r >= a
}
