package mm

import "golang.org/x/sys/unix"

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
		m.vmas.s[k].locked = lock
	}
	if lock && !onFault {
		m.populateLocked(start, end)
	}
	return nil
}

// populateLocked makes the pages of [lo, hi) resident.
func (m *MemoryManager) populateLocked(lo, hi uintptr) {
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
			m.vmas.s[k].locked = true
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
		m.vmas.s[k].locked = false
	}
	m.lockFuture = false
}
