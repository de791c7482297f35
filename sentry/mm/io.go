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
	m.mu.RLock()
	defer m.mu.RUnlock()
	done := 0
	err := m.forEachLocked(addr, len(dst), false, func(mem []byte) { done += copy(dst[done:], mem) })
	return done, err
}

// CopyOut copies src into guest memory at addr, like CopyIn.
func (m *MemoryManager) CopyOut(addr uintptr, src []byte) (int, error) {
	unlock := m.lockForWrite([]Range{{addr, len(src)}})
	defer unlock()
	done := 0
	err := m.forEachLocked(addr, len(src), true, func(mem []byte) { done += copy(mem, src[done:]) })
	return done, err
}

// ZeroOut zeroes n bytes of guest memory at addr.
func (m *MemoryManager) ZeroOut(addr uintptr, n int) (int, error) {
	unlock := m.lockForWrite([]Range{{addr, n}})
	defer unlock()
	done := 0
	err := m.forEachLocked(addr, n, true, func(mem []byte) { clear(mem); done += len(mem) })
	return done, err
}

// lockForWrite takes the lock for writing into ranges: the read lock,
// unless some page there is copy-on-write, which must be copied first under
// the write lock. It returns the unlock.
func (m *MemoryManager) lockForWrite(ranges []Range) func() {
	m.mu.RLock()
	cow := false
	for _, r := range ranges {
		pi, pj := m.pmas.span(r.Addr, r.Addr+uintptr(r.Len))
		for k := pi; k < pj && !cow; k++ {
			cow = m.pmas.s[k].cow
		}
	}
	if !cow {
		return m.mu.RUnlock
	}
	m.mu.RUnlock()
	m.mu.Lock()
	for _, r := range ranges {
		end := r.Addr + uintptr(r.Len)
		if end < r.Addr {
			continue
		}
		// Only writable mappings: the copy for an unwritable one is refused
		// below anyway.
		hi, ok := pageRoundUp(end)
		if !ok {
			continue
		}
		vi, vj := m.vmas.span(r.Addr, end)
		for _, v := range m.vmas.s[vi:vj] {
			if v.prot&platform.ProtWrite != 0 {
				m.breakCowLocked(max(v.start, pageRoundDown(r.Addr)), min(v.end, hi))
			}
		}
	}
	return m.mu.Unlock
}

// WithSlices calls fn with the sentry's views of the guest buffers in
// ranges, in order (for writing into them if write is set), while no
// mapping can change: fn must not block on anything the guest controls. If
// only a prefix is accessible, fn gets that prefix; if none is, WithSlices
// returns EFAULT.
func (m *MemoryManager) WithSlices(ranges []Range, write bool, fn func(bufs [][]byte) (int, error)) (int, error) {
	var unlock func()
	if write {
		unlock = m.lockForWrite(ranges)
	} else {
		m.mu.RLock()
		unlock = m.mu.RUnlock
	}
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
	m.mu.RLock()
	defer m.mu.RUnlock()
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
// Writing into a copy-on-write page is the caller's to prevent (lockForWrite).
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
// page's memory exists (the guest or a file filled it), as mincore(2) does.
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
	pi, pj := m.pmas.span(addr, end)
	for _, p := range m.pmas.s[pi:pj] {
		lo, hi := max(p.start, addr), min(p.end, end)
		if err := m.mf.Residency(p.off+uint64(lo-p.start), uint64(hi-lo), out[(lo-addr)/PageSize:]); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// ResidentBytes is how much of the address space's memory exists now (its
// resident set).
func (m *MemoryManager) ResidentBytes() uint64 {
	m.mu.RLock()
	var spans [][2]uintptr
	for _, v := range m.vmas.s {
		spans = append(spans, [2]uintptr{v.start, v.length()})
	}
	m.mu.RUnlock()
	var total uint64
	for _, s := range spans {
		res, err := m.Residency(s[0], s[1])
		if err != nil {
			continue // unmapped meanwhile
		}
		for _, r := range res {
			total += uint64(r) * PageSize
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
