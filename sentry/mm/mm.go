// Package mm is a guest process's memory: its mappings (vmas), the memory
// file pages behind them, and copying between guest addresses and the
// sentry. Every page of a mapping is backed by the memory file from the
// moment it is mapped (pages cost host memory only when touched), and the
// platform address space mirrors the mappings, so the guest takes no fault
// that the sentry must serve. The sentry reads and writes guest memory
// through its own view of the memory file, never through the guest's.
//
// It must never let a mapping reach beyond the platform's MaxUserAddress.
package mm

import (
	"sync"

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

	mu       sync.RWMutex
	vmas     vmaSet
	maxAddr  uintptr
	mmapBase uintptr // top-down search for free ranges starts here
	brkBase  uintptr // start of the heap; 0 until the loader sets it
	brk      uintptr // current program break
	// lockFuture is mlockall(MCL_FUTURE): new mappings start locked.
	lockFuture bool

	// Layout the loader reports, for the auxiliary vector and /proc.
	Layout Layout
}

// Layout records where the loader put things.
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

// New returns an empty memory manager over address space as.
func New(mf *memfile.File, as platform.AddressSpace, maxAddr uintptr) *MemoryManager {
	return &MemoryManager{mf: mf, as: as, maxAddr: maxAddr, mmapBase: maxAddr}
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

// Release frees every mapping and the address space.
func (m *MemoryManager) Release() {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, v := range m.vmas {
		m.mf.Free(v.off, uint64(v.end-v.start))
	}
	m.vmas = nil
	m.as.Release()
}

func pageRoundDown(a uintptr) uintptr { return a &^ (PageSize - 1) }

// pageRoundUp rounds up; ok is false on overflow.
func pageRoundUp(a uintptr) (uintptr, bool) {
	r := (a + PageSize - 1) &^ (PageSize - 1)
	return r, r >= a
}
