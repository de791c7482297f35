package mm

import (
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/platform"
)

// CopyIn copies guest memory at addr into dst. It returns how many bytes it
// copied and EFAULT if it stopped at an unreadable address.
func (m *MemoryManager) CopyIn(addr uintptr, dst []byte) (int, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.forEachLocked(addr, len(dst), false, func(done int, mem []byte) { copy(dst[done:], mem) })
}

// CopyOut copies src into guest memory at addr, like CopyIn.
func (m *MemoryManager) CopyOut(addr uintptr, src []byte) (int, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.forEachLocked(addr, len(src), true, func(done int, mem []byte) { copy(mem, src[done:]) })
}

// ZeroOut zeroes n bytes of guest memory at addr.
func (m *MemoryManager) ZeroOut(addr uintptr, n int) (int, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.forEachLocked(addr, n, true, func(_ int, mem []byte) { clear(mem) })
}

// Range is one guest buffer: an address and a length.
type Range struct {
	Addr uintptr
	Len  int
}

// WithSlices calls fn with the sentry's views of the guest buffers in
// ranges, in order (for writing into them if write is set), while no
// mapping can change: fn must not block on anything the guest controls. If
// only a prefix is accessible, fn gets that prefix; if none is, WithSlices
// returns EFAULT.
func (m *MemoryManager) WithSlices(ranges []Range, write bool, fn func(bufs [][]byte) (int, error)) (int, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	var bufs [][]byte
	for _, r := range ranges {
		got, err := m.forEachLocked(r.Addr, r.Len, write, func(_ int, mem []byte) { bufs = append(bufs, mem) })
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
		v, ok := m.vmas.lookup(addr)
		if !ok || v.prot&protAll == 0 {
			return "", unix.EFAULT
		}
		n := min(uintptr(max-len(out)), v.end-addr)
		mem := m.mf.Slice(v.off+uint64(addr-v.start), uint64(n))
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

// forEachLocked walks the memory-file views of [addr, addr+n), calling fn
// with how many bytes came before each view. It stops with EFAULT at the
// first address that is unmapped or lacks the access.
func (m *MemoryManager) forEachLocked(addr uintptr, n int, write bool, fn func(done int, mem []byte)) (int, error) {
	done := 0
	for done < n {
		v, ok := m.vmas.lookup(addr)
		if !ok || (write && v.prot&platform.ProtWrite == 0) || (!write && v.prot&protAll == 0) {
			return done, unix.EFAULT
		}
		k := min(uintptr(n-done), v.end-addr)
		fn(done, m.mf.Slice(v.off+uint64(addr-v.start), uint64(k)))
		done += int(k)
		addr += k
	}
	return done, nil
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
	m.mu.RLock()
	defer m.mu.RUnlock()
	if !m.vmas.covered(addr, end) {
		return nil, unix.ENOMEM
	}
	out := make([]byte, (end-addr)/PageSize)
	pos := 0
	for k := m.vmas.find(addr); k < len(m.vmas) && m.vmas[k].start < end; k++ {
		v := &m.vmas[k]
		lo, hi := max(v.start, addr), min(v.end, end)
		view := m.mf.Slice(v.off+uint64(lo-v.start), uint64(hi-lo))
		n := int((hi - lo) / PageSize)
		if _, _, errno := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(&view[0])), uintptr(len(view)),
			uintptr(unsafe.Pointer(&out[pos]))); errno != 0 {
			return nil, errno
		}
		pos += n
	}
	for i := range out {
		out[i] &= 1
	}
	return out, nil
}

// ResidentBytes is how much of the address space's memory exists now (its
// resident set).
func (m *MemoryManager) ResidentBytes() uint64 {
	m.mu.RLock()
	var spans [][2]uintptr
	for _, v := range m.vmas {
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
