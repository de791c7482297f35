package mm

import (
	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/platform"
)

// Sealed mappings (mseal(2)): once sealed, a mapping keeps its range and
// protection for the life of the address space. Unmapping, moving,
// resizing or reprotecting it, mapping over it with MAP_FIXED, and
// discarding the pages of a read-only private one all answer EPERM, as
// Linux's can_modify_vma makes them. A fork keeps the seals (the vmas are
// copied), an exec drops them with the old address space.

// Mseal seals the mappings of [addr, addr+length), which must all be
// mapped (ENOMEM otherwise). length is rounded up to a page.
func (m *MemoryManager) Mseal(addr, length uintptr) error {
	if addr%PageSize != 0 {
		return unix.EINVAL
	}
	n, ok := pageRoundUp(length)
	if !ok || (length != 0 && n == 0) || addr+n < addr {
		return unix.EINVAL
	}
	if n == 0 {
		return nil
	}
	end := addr + n
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.vmas.covered(addr, end) {
		return unix.ENOMEM
	}
	i, j := m.vmas.isolate(addr, end)
	for k := i; k < j; k++ {
		m.vmas.s[k].sealed = true
	}
	m.anySealed = true
	return nil
}

// sealedLocked reports whether a sealed mapping meets [lo, hi). Until a
// first mseal it costs one test.
func (m *MemoryManager) sealedLocked(lo, hi uintptr) bool {
	if !m.anySealed {
		return false
	}
	i, j := m.vmas.span(lo, hi)
	for _, v := range m.vmas.s[i:j] {
		if v.sealed {
			return true
		}
	}
	return false
}

// discardSealedLocked reports whether discarding the pages of [lo, hi)
// (madvise MADV_DONTNEED and the like) meets a sealed mapping whose
// contents the discard would change: private and not writable, where the
// guest could not have changed them itself.
func (m *MemoryManager) discardSealedLocked(lo, hi uintptr) bool {
	if !m.anySealed {
		return false
	}
	i, j := m.vmas.span(lo, hi)
	for _, v := range m.vmas.s[i:j] {
		if v.sealed && !v.shared && v.prot&platform.ProtWrite == 0 {
			return true
		}
	}
	return false
}
