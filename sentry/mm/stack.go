package mm

// Stacks grow down on demand, as Linux's VM_GROWSDOWN mappings do: a fault
// below a stack grows it to the faulting page, while it stays within
// RLIMIT_STACK and clear of the mapping below by the guard gap.
const (
	stackGuardGap = 256 * PageSize // Linux's stack_guard_gap
	stackChunk    = 16 * PageSize  // how much a fault grows a stack by, at least
)

// growStackLocked grows the stack just above addr down to cover addr, if
// there is one and it may; it reports whether it did.
func (m *MemoryManager) growStackLocked(addr uintptr) bool {
	i := m.vmas.find(addr)
	if i == len(m.vmas.s) || m.vmas.s[i].start <= addr || !m.vmas.s[i].growsDown {
		return false
	}
	v := m.vmas.s[i]
	limit := uint64(1<<63 - 1)
	if m.limitStack != nil {
		limit = m.limitStack()
	}
	floor := uintptr(MinAddr)
	if i > 0 {
		floor = m.vmas.s[i-1].end + stackGuardGap
	}
	lo := pageRoundDown(addr)
	if lo < floor || uint64(v.end-lo) > limit {
		return false
	}
	// Grow by a chunk where that stays within the rules, by a page at least.
	if c := v.start - stackChunk; c < lo && c >= floor && c < v.start && uint64(v.end-c) <= limit {
		lo = c
	}
	if !m.growOKLocked(v.start - lo) {
		return false
	}
	ext := v
	ext.start, ext.end = lo, v.start
	ext.file, ext.cache, ext.pages = nil, nil, nil // fresh zero pages
	ps, err := m.backLocked(&ext, lo, v.start)
	if err != nil {
		return false
	}
	m.vmas.s[i].start = lo // the stack vma itself grows: one [stack] mapping
	m.insertPmasLocked(&m.vmas.s[i], ps)
	return true
}

// EnsureStack grows a stack to cover addr if addr is just below one (the
// kernel writes a signal frame there, as a guest instruction would).
func (m *MemoryManager) EnsureStack(addr uintptr) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.vmas.lookup(addr); !ok {
		m.growStackLocked(addr)
	}
}
