package mm

import (
	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/platform"
)

// Range is one guest buffer: an address and a length.
type Range struct {
	Addr uintptr
	Len  int
}

// CopyIn copies guest memory at addr into dst. It returns how many bytes it
// copied and EFAULT if it stopped at an unreadable address.
func (m *MemoryManager) CopyIn(addr uintptr, dst []byte) (int, error) {
	unlock := m.lockFor([]Range{{addr, len(dst)}}, false)
	defer unlock()
	done := 0
	err := m.forEachLocked(addr, len(dst), false, func(mem []byte) { done += copy(dst[done:], mem) })
	return done, err
}

// CopyOut copies src into guest memory at addr, like CopyIn.
func (m *MemoryManager) CopyOut(addr uintptr, src []byte) (int, error) {
	unlock := m.lockFor([]Range{{addr, len(src)}}, true)
	defer unlock()
	done := 0
	err := m.forEachLocked(addr, len(src), true, func(mem []byte) { done += copy(mem, src[done:]) })
	return done, err
}

// ZeroOut zeroes n bytes of guest memory at addr.
func (m *MemoryManager) ZeroOut(addr uintptr, n int) (int, error) {
	unlock := m.lockFor([]Range{{addr, n}}, true)
	defer unlock()
	done := 0
	err := m.forEachLocked(addr, n, true, func(mem []byte) { clear(mem); done += len(mem) })
	return done, err
}

// cowLocked reports whether some page of ranges is copy-on-write.
func (m *MemoryManager) cowLocked(ranges []Range) bool {
	for _, r := range ranges {
		pi, pj := m.pmas.span(r.Addr, r.Addr+uintptr(r.Len))
		for k := pi; k < pj; k++ {
			if m.pmas.s[k].cow {
				return true
			}
		}
	}
	return false
}

// breakCowRangesLocked copies the copy-on-write pages of ranges, in
// writable mappings only: the copy for an unwritable one is refused when
// the write is tried anyway.
func (m *MemoryManager) breakCowRangesLocked(ranges []Range) {
	for _, r := range ranges {
		lo, hi, ok := pageSpan(r)
		if !ok {
			continue
		}
		vi, vj := m.vmas.span(lo, hi)
		for _, v := range m.vmas.s[vi:vj] {
			if v.prot&platform.ProtWrite != 0 {
				m.breakCowLocked(max(v.start, lo), min(v.end, hi))
			}
		}
	}
}

// WithSlices calls fn with the sentry's views of the guest buffers in
// ranges, in order (for writing into them if write is set), while no
// mapping can change: fn must not block on anything the guest controls. If
// only a prefix is accessible, fn gets that prefix; if none is, WithSlices
// returns EFAULT.
func (m *MemoryManager) WithSlices(ranges []Range, write bool, fn func(bufs [][]byte) (int, error)) (int, error) {
	unlock := m.lockFor(ranges, write)
	defer unlock()
	var bufs [][]byte
	for _, r := range ranges {
		got := 0
		err := m.forEachLocked(r.Addr, r.Len, write, func(mem []byte) { bufs = append(bufs, mem); got += len(mem) })
		if err != nil {
			if len(bufs) == 0 {
				return 0, err
			}
			break
		}
		if got < r.Len {
			break
		}
	}
	return fn(bufs)
}

// CopyInString reads a NUL-terminated string of at most max bytes (without
// the NUL). It returns ENAMETOOLONG if no NUL comes within max bytes.
func (m *MemoryManager) CopyInString(addr uintptr, max int) (string, error) {
	unlock := m.lockFor([]Range{{addr, max}}, false)
	defer unlock()
	var out []byte
	for len(out) < max {
		p, ok := m.pmas.lookup(addr)
		v, vok := m.vmas.lookup(addr)
		if !ok || !vok || v.prot&protAll == 0 {
			return "", unix.EFAULT
		}
		n := min(uintptr(max-len(out)), p.end-addr)
		mem := m.mf.Slice(p.off+uint64(addr-p.start), uint64(n))
		for i, c := range mem {
			if c == 0 {
				return string(append(out, mem[:i]...)), nil
			}
		}
		out = append(out, mem...)
		addr += n
	}
	return "", unix.ENAMETOOLONG
}

// forEachLocked walks the memory-file views of [addr, addr+n). It stops
// with EFAULT at the first address that is unmapped or lacks the access.
// Writing into a copy-on-write page is the caller's to prevent (lockFor).
func (m *MemoryManager) forEachLocked(addr uintptr, n int, write bool, fn func(mem []byte)) error {
	for left := uintptr(n); left > 0; {
		v, ok := m.vmas.lookup(addr)
		if !ok || (write && v.prot&platform.ProtWrite == 0) || (!write && v.prot&protAll == 0) {
			return unix.EFAULT
		}
		p, ok := m.pmas.lookup(addr)
		if !ok || (write && p.cow) || p.pastEOF {
			return unix.EFAULT
		}
		k := min(left, p.end-addr)
		fn(m.mf.Slice(p.off+uint64(addr-p.start), uint64(k)))
		left -= k
		addr += k
	}
	return nil
}

// IsMapped reports whether addr lies in a mapping, which tells a fault
// on a protected page (SEGV_ACCERR) from one on no page (SEGV_MAPERR).
func (m *MemoryManager) IsMapped(addr uintptr) bool {
	m.mu.RLock()
	defer m.mu.RUnlock()
	_, ok := m.vmas.lookup(addr)
	return ok
}

// IsMappedRange reports whether every page of [addr, addr+length) is mapped.
func (m *MemoryManager) IsMappedRange(addr, length uintptr) bool {
	end, ok := pageRoundUp(addr + length)
	if !ok || addr+length < addr {
		return false
	}
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.vmas.covered(pageRoundDown(addr), end)
}

// Residency reports, one byte per page of [addr, addr+length), whether the
// page's memory exists (the guest or a file filled it), as mincore(2) does:
// for a lazy mapping's page not backed yet, whether the file's page is
// (an anonymous one's is not).
func (m *MemoryManager) Residency(addr, length uintptr) ([]byte, error) {
	end, ok := pageRoundUp(addr + length)
	if !ok {
		return nil, unix.ENOMEM
	}
	if end == addr {
		return nil, nil // no page: Linux answers success, mapped or not
	}
	m.mu.RLock()
	defer m.mu.RUnlock()
	if !m.vmas.covered(addr, end) {
		return nil, unix.ENOMEM
	}
	out := make([]byte, (end-addr)/PageSize)
	vi, vj := m.vmas.span(addr, end)
	for k := vi; k < vj; k++ {
		if v := &m.vmas.s[k]; v.pages != nil {
			lo, hi := max(v.start, addr), min(v.end, end)
			if err := v.pages.residency(v.fileOff+uint64(lo-v.start), uint64(hi-lo), out[(lo-addr)/PageSize:]); err != nil {
				return nil, err
			}
		}
	}
	pi, pj := m.pmas.span(addr, end)
	for _, p := range m.pmas.s[pi:pj] {
		lo, hi := max(p.start, addr), min(p.end, end)
		if err := m.mf.Residency(p.off+uint64(lo-p.start), uint64(hi-lo), out[(lo-addr)/PageSize:]); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// residencyStep bounds how many pages ResidentSize asks the host about
// at once, for a buffer of its own size.
const residencyStep = 1024

// ResidentBytes is how much of the address space's memory exists now (its
// resident set): the pages it maps that the host holds.
func (m *MemoryManager) ResidentBytes() uint64 { return m.ResidentSize(0, m.maxAddr) }

// ResidentSize is how many bytes of [addr, addr+length) this address
// space maps to memory that exists, as a mapping's Rss in
// /proc/<pid>/smaps counts them. Its cost is in the pages backed, not in
// the length.
func (m *MemoryManager) ResidentSize(addr, length uintptr) uint64 {
	end := addr + length
	if end < addr {
		end = ^uintptr(0)
	}
	var buf [residencyStep]byte
	var total uint64
	m.mu.RLock()
	defer m.mu.RUnlock()
	pi, pj := m.pmas.span(addr, end)
	for _, p := range m.pmas.s[pi:pj] {
		for lo, hi := max(p.start, addr), min(p.end, end); lo < hi; {
			n := min(hi-lo, residencyStep*PageSize)
			if m.mf.Residency(p.off+uint64(lo-p.start), uint64(n), buf[:]) != nil {
				break
			}
			for _, r := range buf[:n/PageSize] {
				total += uint64(r) * PageSize
			}
			lo += n
		}
	}
	return total
}

// ZeroPrivileged zeroes [addr, addr+n) whatever the mappings' protection,
// copying copy-on-write pages first: the loader clears the part of a
// segment's last page that lies past the file's data.
func (m *MemoryManager) ZeroPrivileged(addr uintptr, n int) error {
	if n == 0 {
		return nil
	}
	hi, ok := pageRoundUp(addr + uintptr(n))
	if !ok {
		return unix.EFAULT
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.fillRangesLocked([]Range{{addr, n}})
	if err := m.breakCowLocked(pageRoundDown(addr), hi); err != nil {
		return err
	}
	for left := uintptr(n); left > 0; {
		p, ok := m.pmas.lookup(addr)
		if !ok {
			return unix.EFAULT
		}
		k := min(left, p.end-addr)
		clear(m.mf.Slice(p.off+uint64(addr-p.start), uint64(k)))
		left -= k
		addr += k
	}
	return nil
}
