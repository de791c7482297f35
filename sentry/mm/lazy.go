package mm

// Two kinds of mapping are backed lazily, as they are touched, by a guest
// fault or by the sentry reaching the memory (read(2) into it, a futex
// word), a fault window at a time:
//
//   - Mappings of FilePages (memfd, tmpfs, System V shared memory, a host
//     file's cache): mmap backs only their first eagerBacking bytes. Such
//     a file may be terabytes long and mapped whole at once, as on Linux,
//     where only touched pages cost: backing every chunk at mmap time cost
//     bookkeeping and memory-file space in proportion to the mapping's
//     size. Pages of such a mapping past the file's end are never backed;
//     touching them raises SIGBUS until the file grows over them.
//   - Private anonymous mappings longer than anonEagerMax (anonLazy):
//     mmap backs none of them. Go's runtime, the JVM and ASan's shadow
//     reserve gigabytes to terabytes of address space and touch little of
//     it, more than the memory file could back at once; Linux commits such
//     memory only at the first touch too.
//
// Other mappings are backed whole when made: the host allocates a
// memory-file page only at its first touch, without the sentry, so backing
// up front costs memory-file space alone and saves the guest a trap per
// window.
const (
	// eagerBacking covers a small mapping of a file whole, so that it
	// takes no fault.
	eagerBacking = 1 << 20
	// faultWindow is how much a touch of a file's mapping backs, aligned:
	// four chunks, for bookkeeping small beside the page touched, and a
	// fault per 256 KiB of a file read or written through a mapping in
	// order.
	faultWindow = 4 * ChunkSize
	// anonEagerMax is the longest private anonymous mapping backed whole
	// when made: malloc's arenas and buffers, thread stacks and the heap
	// stay as fast as before, without a trap for their first touches.
	anonEagerMax = 1 << 30
	// anonFaultWindow is how much a touch of a lazy anonymous mapping
	// backs, aligned: one host mapping of fresh pages per 2 MiB, a
	// transparent huge page's worth, whose untouched pages cost nothing.
	anonFaultWindow = 2 << 20
)

// lazy reports whether v's pages may be backed only when touched.
func (v *vma) lazy() bool { return v.pages != nil || v.anonLazy }

// window is how much a touch of lazy mapping v backs.
func (v *vma) window() uintptr {
	if v.pages != nil {
		return faultWindow
	}
	return anonFaultWindow
}

// lazyAnonymous reports whether a private anonymous mapping of length
// bytes is backed as it is touched.
func lazyAnonymous(length uintptr) bool { return length > anonEagerMax }

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
		vi, vj := m.vmas.span(lo, hi)
		for k := vi; k < vj; k++ {
			if v := &m.vmas.s[k]; v.lazy() {
				w := v.window()
				wlo, whi := lo&^(w-1), hi
				if e := (hi + w - 1) &^ (w - 1); e > hi {
					whi = e
				}
				m.fillLocked(v, max(wlo, v.start), min(whi, v.end))
			}
		}
	}
}

// fillLocked backs the holes of lazy mapping v in [lo, hi) with the
// file's pages, as far as the file reaches, or with fresh zero pages, and
// maps them on the host. A hole it cannot back (past the file's end, or
// no memory left) stays.
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
		var ps []pma
		var err error
		if v.pages != nil {
			ps, err = m.filePagesLocked(v, lo, holeEnd)
		} else {
			ps, err = m.zeroPagesLocked(lo, holeEnd, false)
		}
		if err != nil {
			return
		}
		m.insertPmasLocked(v, ps)
		lo = holeEnd
	}
}

// fillFaultLocked backs the fault window around addr in lazy mapping v.
func (m *MemoryManager) fillFaultLocked(v *vma, addr uintptr) {
	w := addr &^ (v.window() - 1)
	m.fillLocked(v, max(w, v.start), min(w+v.window(), v.end))
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
