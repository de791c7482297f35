package mm

import (
	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/platform"
)

// Guest memory is never swapped out by the sentry, so locking marks
// mappings and, as on Linux, makes their pages resident: /proc reports them
// (VmLck), and the marks follow the mappings through splits and moves as
// Linux's VM_LOCKED does.

// Mlock marks [addr, addr+length) locked or unlocked (mlock(2), munlock(2),
// mlock2(2)); addr is rounded down to a page. Locking makes the pages
// resident, unless onFault (MLOCK_ONFAULT) leaves them to be locked as
// they are touched.
func (m *MemoryManager) Mlock(addr, length uintptr, lock, onFault bool) error {
	end, ok := pageRoundUp(addr + length)
	if !ok || addr+length < addr {
		return unix.ENOMEM
	}
	start := pageRoundDown(addr)
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.vmas.covered(start, end) {
		return unix.ENOMEM
	}
	i, j := m.vmas.isolate(start, end)
	for k := i; k < j; k++ {
		m.vmas.s[k].locked, m.vmas.s[k].onFault = lock, lock && onFault
	}
	if lock && !onFault {
		m.populateLocked(start, end)
	}
	return nil
}

// populateLocked makes the pages of [lo, hi) resident, backing those of
// lazy mappings first.
func (m *MemoryManager) populateLocked(lo, hi uintptr) {
	vi, vj := m.vmas.span(lo, hi)
	for k := vi; k < vj; k++ {
		if v := &m.vmas.s[k]; v.lazy() {
			m.fillLocked(v, max(lo, v.start), min(hi, v.end))
		}
	}
	pi, pj := m.pmas.span(lo, hi)
	for _, p := range m.pmas.s[pi:pj] {
		a, b := max(p.start, lo), min(p.end, hi)
		m.mf.Populate(p.off+uint64(a-p.start), uint64(b-a))
	}
}

// MlockAll implements mlockall(2): current locks every mapping now, future
// every mapping made later.
func (m *MemoryManager) MlockAll(current, future bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if current {
		for k := range m.vmas.s {
			m.vmas.s[k].locked, m.vmas.s[k].onFault = true, false
		}
		m.populateLocked(0, m.maxAddr)
	}
	m.lockFuture = future
}

// MunlockAll implements munlockall(2).
func (m *MemoryManager) MunlockAll() {
	m.mu.Lock()
	defer m.mu.Unlock()
	for k := range m.vmas.s {
		m.vmas.s[k].locked, m.vmas.s[k].onFault = false, false
	}
	m.lockFuture = false
}

// Populate implements madvise(MADV_POPULATE_READ or MADV_POPULATE_WRITE):
// the pages of [addr, addr+length) are made as a read (or write) of each
// would make them, backed, copied if shared copy-on-write and written,
// and resident. As Linux walks the range, mapping by mapping, the first
// trouble is the answer: a hole is ENOMEM, a mapping that does not allow
// the access EINVAL, a page past its file's end EFAULT.
func (m *MemoryManager) Populate(addr, length uintptr, write bool) error {
	end, ok := pageRoundUp(addr + length)
	if !ok || addr+length < addr || addr%PageSize != 0 {
		return unix.EINVAL
	}
	need := platform.ProtRead
	if write {
		need = platform.ProtWrite
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for a := addr; a < end; {
		v, ok := m.vmas.lookup(a)
		if !ok {
			return unix.ENOMEM
		}
		if v.prot&need == 0 {
			return unix.EINVAL
		}
		hi := min(v.end, end)
		if err := m.faultInLocked(a, hi, write); err != nil {
			return err
		}
		a = hi
	}
	return nil
}

// faultInLocked backs the pages of [lo, hi), copies those shared
// copy-on-write if write, and makes them resident. It is EFAULT if a page
// could not be backed (past its file's end, or no memory).
func (m *MemoryManager) faultInLocked(lo, hi uintptr, write bool) error {
	vi, vj := m.vmas.span(lo, hi)
	for k := vi; k < vj; k++ {
		if v := &m.vmas.s[k]; v.lazy() {
			m.fillLocked(v, max(lo, v.start), min(hi, v.end))
		}
	}
	if !m.pmas.covered(lo, hi) {
		return unix.EFAULT
	}
	pi, pj := m.pmas.span(lo, hi)
	for _, p := range m.pmas.s[pi:pj] {
		if p.pastEOF {
			return unix.EFAULT
		}
	}
	if write {
		if err := m.breakCowLocked(lo, hi); err != nil {
			return unix.ENOMEM
		}
	}
	m.populateLocked(lo, hi)
	return nil
}

// populateMappingLocked is MAP_POPULATE's (and MAP_LOCKED's) work on the
// new mapping v: as Linux's populate does, a private writable mapping is
// faulted in for writing (its pages become its own, copied from a file's
// now, so later writes to the file no longer show through), any other
// for reading. What cannot be populated is left to fault later.
func (m *MemoryManager) populateMappingLocked(v *vma) {
	m.faultInLocked(v.start, v.end, !v.shared && v.prot&platform.ProtWrite != 0)
}
