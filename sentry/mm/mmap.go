package mm

import (
	"io"
	"sort"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/platform"
)

// FileSource is a file a mapping takes its initial contents from.
type FileSource interface {
	ReadAt(dst []byte, off int64) (int, error)
}

// MMapOpts describes one mapping request, already decoded from mmap's flags.
type MMapOpts struct {
	Addr      uintptr // hint, or the address when Fixed or NoReplace
	Length    uintptr
	Prot      platform.Prot
	MaxProt   platform.Prot // zero means read, write and execute
	Fixed     bool          // MAP_FIXED: replace whatever is there
	NoReplace bool          // MAP_FIXED_NOREPLACE: fail with EEXIST instead
	Shared    bool          // MAP_SHARED
	File      FileSource    // nil for anonymous memory
	Offset    uint64        // file offset, page aligned
	Name      string        // for /proc/<pid>/maps
}

const protAll = platform.ProtRead | platform.ProtWrite | platform.ProtExec

// MMap creates a mapping and returns its address. File contents are copied
// into the mapping's pages now: a MAP_SHARED file mapping is therefore a
// snapshot that does not write back.
func (m *MemoryManager) MMap(o MMapOpts) (uintptr, error) {
	if o.Length == 0 {
		return 0, unix.EINVAL
	}
	length, ok := pageRoundUp(o.Length)
	if !ok || length > m.maxAddr {
		return 0, unix.ENOMEM
	}
	if o.Offset%PageSize != 0 {
		return 0, unix.EINVAL
	}
	if o.MaxProt == 0 {
		o.MaxProt = protAll
	}
	m.mu.Lock()
	defer m.mu.Unlock()

	var addr uintptr
	if o.Fixed || o.NoReplace {
		addr = o.Addr
		if addr%PageSize != 0 {
			return 0, unix.EINVAL
		}
		if addr < MinAddr {
			return 0, unix.EPERM
		}
		if addr+length < addr || addr+length > m.maxAddr {
			return 0, unix.ENOMEM
		}
		if !o.Fixed && !m.vmas.free(addr, addr+length) {
			return 0, unix.EEXIST
		}
	} else {
		addr, ok = m.findRange(pageRoundDown(o.Addr), length)
		if !ok {
			return 0, unix.ENOMEM
		}
	}

	off, err := m.mf.Allocate(uint64(length))
	if err != nil {
		return 0, unix.ENOMEM
	}
	if o.File != nil {
		if _, err := o.File.ReadAt(m.mf.Slice(off, uint64(length)), int64(o.Offset)); err != nil && err != io.EOF {
			m.mf.Free(off, uint64(length))
			return 0, err
		}
	}
	// A fixed mapping replaces the old one on the host in the same step.
	m.removeLocked(addr, addr+length, false)
	m.vmas.insert(vma{start: addr, end: addr + length, off: off, prot: o.Prot, maxProt: o.MaxProt, shared: o.Shared,
		name: o.Name, src: o.File, srcOff: o.Offset, locked: m.lockFuture})
	if err := m.as.MapFile(addr, off, length, o.Prot); err != nil {
		m.removeLocked(addr, addr+length, true)
		return 0, unix.ENOMEM
	}
	return addr, nil
}

// findRange finds a free range of length bytes: at hint if it is free, else
// the highest one below mmapBase, else the lowest one above it.
func (m *MemoryManager) findRange(hint, length uintptr) (uintptr, bool) {
	s := m.vmas
	if hint >= MinAddr && hint+length > hint && hint+length <= m.maxAddr && s.free(hint, hint+length) {
		return hint, true
	}
	top := m.mmapBase
	end := top
	for k := sort.Search(len(s), func(i int) bool { return s[i].start >= top }) - 1; ; k-- {
		gapStart := uintptr(MinAddr)
		if k >= 0 {
			gapStart = s[k].end
		}
		if gapStart < end && end-gapStart >= length {
			return end - length, true
		}
		if k < 0 {
			break
		}
		if s[k].start < end {
			end = s[k].start
		}
	}
	start := top
	for i := s.find(start); ; i++ {
		gapEnd := m.maxAddr
		if i < len(s) {
			gapEnd = s[i].start
		}
		if gapEnd > start && gapEnd-start >= length {
			return start, true
		}
		if i == len(s) {
			return 0, false
		}
		if s[i].end > start {
			start = s[i].end
		}
	}
}

// removeLocked drops the mappings in [start, end) and frees their pages.
func (m *MemoryManager) removeLocked(start, end uintptr, hostUnmap bool) {
	i, j := m.vmas.isolate(start, end)
	if i == j {
		return
	}
	for _, v := range m.vmas[i:j] {
		m.mf.Free(v.off, uint64(v.length()))
	}
	m.vmas = append(m.vmas[:i], m.vmas[j:]...)
	if hostUnmap {
		m.as.Unmap(start, end-start)
	}
}

// Munmap implements munmap(2).
func (m *MemoryManager) Munmap(addr, length uintptr) error {
	if addr%PageSize != 0 || length == 0 {
		return unix.EINVAL
	}
	length, ok := pageRoundUp(length)
	if !ok || addr+length < addr || addr+length > m.maxAddr {
		return unix.EINVAL
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.removeLocked(addr, addr+length, true)
	return nil
}

// Mprotect implements mprotect(2).
func (m *MemoryManager) Mprotect(addr, length uintptr, prot platform.Prot) error {
	const growsDown, growsUp = 0x01000000, 0x02000000
	if addr%PageSize != 0 || prot&^(protAll|growsDown|growsUp) != 0 {
		return unix.EINVAL
	}
	prot &= protAll
	if length == 0 {
		return nil
	}
	length, ok := pageRoundUp(length)
	if !ok || addr+length < addr {
		return unix.ENOMEM
	}
	end := addr + length
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.vmas.covered(addr, end) {
		return unix.ENOMEM
	}
	for k := m.vmas.find(addr); k < len(m.vmas) && m.vmas[k].start < end; k++ {
		if prot&^m.vmas[k].maxProt != 0 {
			return unix.EACCES
		}
	}
	i, j := m.vmas.isolate(addr, end)
	for k := i; k < j; k++ {
		m.vmas[k].prot = prot
	}
	return m.as.Protect(addr, length, prot)
}

// SetBrkBase starts the heap at base (the end of the executable's data).
func (m *MemoryManager) SetBrkBase(base uintptr) {
	m.mu.Lock()
	m.brkBase, m.brk = base, base
	m.mu.Unlock()
}

// Brk implements brk(2): it moves the program break and returns the new
// one, or the old one if the move is not possible.
func (m *MemoryManager) Brk(addr uintptr) uintptr {
	m.mu.Lock()
	defer m.mu.Unlock()
	if addr < m.brkBase || addr > m.mmapBase {
		return m.brk
	}
	oldEnd, _ := pageRoundUp(m.brk)
	newEnd, _ := pageRoundUp(addr)
	switch {
	case newEnd > oldEnd:
		if !m.vmas.free(oldEnd, newEnd) {
			return m.brk
		}
		off, err := m.mf.Allocate(uint64(newEnd - oldEnd))
		if err != nil {
			return m.brk
		}
		rw := platform.ProtRead | platform.ProtWrite
		m.vmas.insert(vma{start: oldEnd, end: newEnd, off: off, prot: rw, maxProt: protAll, name: "[heap]",
			locked: m.lockFuture})
		if err := m.as.MapFile(oldEnd, off, newEnd-oldEnd, rw); err != nil {
			m.removeLocked(oldEnd, newEnd, true)
			return m.brk
		}
	case newEnd < oldEnd:
		m.removeLocked(newEnd, oldEnd, true)
	}
	m.brk = addr
	return addr
}

// Mremap flags.
const (
	mremapMaymove = 1
	mremapFixed   = 2
)

// Mremap implements mremap(2) for private and anonymous mappings: the
// pages move with the mapping, nothing is copied.
func (m *MemoryManager) Mremap(oldAddr, oldLen, newLen uintptr, flags int, newAddr uintptr) (uintptr, error) {
	if oldAddr%PageSize != 0 || flags&^(mremapMaymove|mremapFixed) != 0 ||
		(flags&mremapFixed != 0 && flags&mremapMaymove == 0) || newLen == 0 || oldLen == 0 {
		return 0, unix.EINVAL
	}
	oldLen, ok1 := pageRoundUp(oldLen)
	newLen, ok2 := pageRoundUp(newLen)
	if !ok1 || !ok2 || oldAddr+oldLen < oldAddr {
		return 0, unix.EINVAL
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	v, ok := m.vmas.lookup(oldAddr)
	if !ok || !m.vmas.covered(oldAddr, oldAddr+oldLen) {
		return 0, unix.EFAULT
	}
	if flags&mremapFixed == 0 {
		if newLen <= oldLen {
			m.removeLocked(oldAddr+newLen, oldAddr+oldLen, true)
			return oldAddr, nil
		}
		if oldAddr+newLen > oldAddr && oldAddr+newLen <= m.maxAddr && m.vmas.free(oldAddr+oldLen, oldAddr+newLen) {
			return oldAddr, m.growLocked(oldAddr+oldLen, oldAddr+newLen, *v)
		}
		if flags&mremapMaymove == 0 {
			return 0, unix.ENOMEM
		}
	}
	dst := newAddr
	if flags&mremapFixed != 0 {
		if dst%PageSize != 0 || dst < MinAddr || dst+newLen < dst || dst+newLen > m.maxAddr ||
			(dst < oldAddr+oldLen && oldAddr < dst+newLen) {
			return 0, unix.EINVAL
		}
		m.removeLocked(dst, dst+newLen, true)
	} else {
		var found bool
		if dst, found = m.findRange(0, newLen); !found {
			return 0, unix.ENOMEM
		}
	}
	keep := oldLen
	if newLen < oldLen {
		keep = newLen
		m.removeLocked(oldAddr+newLen, oldAddr+oldLen, true)
	}
	// Move the vmas of [oldAddr, oldAddr+keep) to dst, pages and all.
	i, j := m.vmas.isolate(oldAddr, oldAddr+keep)
	moved := append([]vma(nil), m.vmas[i:j]...)
	m.vmas = append(m.vmas[:i], m.vmas[j:]...)
	m.as.Unmap(oldAddr, keep)
	for _, mv := range moved {
		mv.start, mv.end = dst+(mv.start-oldAddr), dst+(mv.end-oldAddr)
		m.vmas.insert(mv)
		m.as.MapFile(mv.start, mv.off, mv.length(), mv.prot)
	}
	if newLen > keep {
		if err := m.growLocked(dst+keep, dst+newLen, moved[len(moved)-1]); err != nil {
			return 0, err
		}
	}
	return dst, nil
}

// growLocked maps fresh zero pages at [start, end) with like's attributes.
func (m *MemoryManager) growLocked(start, end uintptr, like vma) error {
	off, err := m.mf.Allocate(uint64(end - start))
	if err != nil {
		return unix.ENOMEM
	}
	like.start, like.end, like.off = start, end, off
	like.src = nil // new pages are zero, whatever came before
	m.vmas.insert(like)
	return m.as.MapFile(start, off, end-start, like.prot)
}

// DontNeed implements madvise(MADV_DONTNEED): the pages of [addr,
// addr+length) go back to what a fresh mapping holds, zeros for anonymous
// memory and the file's contents for a private file mapping.
func (m *MemoryManager) DontNeed(addr, length uintptr) error {
	if addr%PageSize != 0 {
		return unix.EINVAL
	}
	length, ok := pageRoundUp(length)
	if !ok || addr+length < addr {
		return unix.EINVAL
	}
	end := addr + length
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.vmas.covered(addr, end) {
		return unix.ENOMEM
	}
	for k := m.vmas.find(addr); k < len(m.vmas) && m.vmas[k].start < end; k++ {
		v := &m.vmas[k]
		lo, hi := max(v.start, addr), min(v.end, end)
		off := v.off + uint64(lo-v.start)
		m.mf.Zero(off, uint64(hi-lo))
		if v.src != nil {
			v.src.ReadAt(m.mf.Slice(off, uint64(hi-lo)), int64(v.srcOff+uint64(lo-v.start)))
		}
	}
	return nil
}
