package mm

// Mappings of FilePages (memfd, tmpfs, System V shared memory, a host
// file's cache) are backed lazily: mmap backs only their first
// eagerBacking bytes, and the rest is backed as it is touched, a
// faultWindow at a time, by a guest fault or by the sentry reaching the
// memory (read(2) into it, a futex word). Such a file may be terabytes
// long and mapped whole at once, as on Linux, where only touched pages
// cost: backing every chunk at mmap time cost bookkeeping and memory-file
// space in proportion to the mapping's size. Pages of such a mapping past
// the file's end are never backed; touching them raises SIGBUS until the
// file grows over them. Other mappings are backed whole when made.
const (
	// eagerBacking covers a small mapping whole, so that it takes no fault.
	eagerBacking = 1 << 20
	// faultWindow is how much a touch backs, aligned: four chunks, for
	// bookkeeping small beside the page touched, and a fault per 256 KiB
	// of a file read or written through a mapping in order.
	faultWindow = 4 * ChunkSize
)

// lazy reports whether v's pages may be backed only when touched.
func (v *vma) lazy() bool { return v.pages != nil }

// unbackedLocked reports whether some page of ranges lies in a lazy
// mapping and is not backed yet.
func (m *MemoryManager) unbackedLocked(ranges []Range) bool {
	for _, r := range ranges {
		lo, hi, ok := pageSpan(r)
		if !ok {
			continue
		}
		vi, vj := m.vmas.span(lo, hi)
		for k := vi; k < vj; k++ {
			v := &m.vmas.s[k]
			if v.lazy() && !m.pmas.covered(max(lo, v.start), min(hi, v.end)) {
				return true
			}
		}
	}
	return false
}

// pageSpan is the page-aligned address range holding r; ok is false if r
// wraps around.
func pageSpan(r Range) (lo, hi uintptr, ok bool) {
	end := r.Addr + uintptr(r.Len)
	if end < r.Addr {
		return 0, 0, false
	}
	hi, ok = pageRoundUp(end)
	return pageRoundDown(r.Addr), hi, ok
}

// fillRangesLocked backs what is not backed yet of the lazy mappings
// in ranges, widened to whole fault windows.
func (m *MemoryManager) fillRangesLocked(ranges []Range) {
	for _, r := range ranges {
		lo, hi, ok := pageSpan(r)
		if !ok {
			continue
		}
		lo &^= faultWindow - 1
		if w := (hi + faultWindow - 1) &^ (faultWindow - 1); w > hi {
			hi = w
		}
		vi, vj := m.vmas.span(lo, hi)
		for k := vi; k < vj; k++ {
			if v := &m.vmas.s[k]; v.lazy() {
				m.fillLocked(v, max(lo, v.start), min(hi, v.end))
			}
		}
	}
}

// fillLocked backs the holes of lazy mapping v in [lo, hi) with the
// file's pages, as far as the file reaches, and maps them on the host. A
// hole it cannot back (past the file's end, or no memory left) stays.
func (m *MemoryManager) fillLocked(v *vma, lo, hi uintptr) {
	for lo < hi {
		i := m.pmas.find(lo)
		if i < len(m.pmas.s) && m.pmas.s[i].start <= lo {
			lo = m.pmas.s[i].end
			continue
		}
		holeEnd := hi
		if i < len(m.pmas.s) {
			holeEnd = min(hi, m.pmas.s[i].start)
		}
		ps, err := m.filePagesLocked(v, lo, holeEnd)
		if err != nil {
			return
		}
		m.insertPmasLocked(v, ps)
		lo = holeEnd
	}
}

// fillFaultLocked backs the fault window around addr in lazy mapping v.
func (m *MemoryManager) fillFaultLocked(v *vma, addr uintptr) {
	w := addr &^ (faultWindow - 1)
	m.fillLocked(v, max(w, v.start), min(w+faultWindow, v.end))
}

// lockFor takes the lock for reaching ranges (for writing into them if
// write is set) and returns the unlock: the read lock, unless a page there
// must change first under the write lock: one of a lazy mapping not backed
// yet, or, for writing, one shared copy-on-write, which is copied.
func (m *MemoryManager) lockFor(ranges []Range, write bool) func() {
	m.mu.RLock()
	if !m.unbackedLocked(ranges) && (!write || !m.cowLocked(ranges)) {
		return m.mu.RUnlock
	}
	m.mu.RUnlock()
	m.mu.Lock()
	m.fillRangesLocked(ranges)
	if write {
		m.breakCowRangesLocked(ranges)
	}
	return m.mu.Unlock
}
