package mm

import (
	"io"
	"sort"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/platform"
)

// MMapOpts describes one mapping request, already decoded from mmap's flags.
type MMapOpts struct {
	Addr      uintptr // hint, or the address when Fixed or NoReplace
	Length    uintptr
	Prot      platform.Prot
	MaxProt   platform.Prot // zero means read, write and execute
	Fixed     bool          // MAP_FIXED: replace whatever is there
	NoReplace bool          // MAP_FIXED_NOREPLACE: fail with EEXIST instead
	Shared    bool          // MAP_SHARED
	GrowsDown bool          // MAP_GROWSDOWN: a stack that grows on faults below it
	Low2G     bool          // MAP_32BIT: placed in [Low2GStart, Low2GEnd) unless fixed
	File      FileSource    // nil for anonymous memory
	Cache     *FileCache    // File's page cache, when it has one
	// Pages are the file's own pages, for a file that keeps its data in
	// the memory file: the mapping is made of them (copy-on-write if
	// private), as far as their Size, and backed lazily (lazy.go).
	Pages  *FilePages
	Offset uint64 // file offset, page aligned
	Name   string // for /proc/<pid>/maps
	// Tracker, if set, is told of every mapping made of it and of every
	// one that goes (shm.go).
	Tracker Tracker
	// Populate (MAP_POPULATE without MAP_NONBLOCK) faults the mapping in
	// when it is made; Locked (MAP_LOCKED) locks it, which populates too.
	Populate, Locked bool
	// NoReserve (MAP_NORESERVE) exempts a private writable mapping from
	// the overcommit heuristic (commit.go).
	NoReserve bool
}

const protAll = platform.ProtRead | platform.ProtWrite | platform.ProtExec

// MMap creates a mapping and returns its address. A file with a page cache
// is mapped from it; another file's contents are copied into the mapping's
// pages now, so a MAP_SHARED mapping of such a file does not write back.
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
		if m.sealedLocked(addr, addr+length) {
			return 0, unix.EPERM
		}
	} else if o.Low2G {
		addr, ok = m.findLow2GLocked(pageRoundDown(o.Addr), length)
		if !ok {
			return 0, unix.ENOMEM
		}
	} else {
		addr, ok = m.findRange(pageRoundDown(o.Addr), length)
		if !ok {
			return 0, unix.ENOMEM
		}
	}
	replaced := uintptr(0)
	if o.Fixed {
		vi, vj := m.vmas.span(addr, addr+length)
		for _, v := range m.vmas.s[vi:vj] {
			replaced += min(v.end, addr+length) - max(v.start, addr)
		}
	}
	if !m.growOKLocked(length - replaced) {
		return 0, unix.ENOMEM
	}
	if !o.Shared && !o.NoReserve && o.Prot&platform.ProtWrite != 0 && !commitFits(length) {
		return 0, unix.ENOMEM
	}
	v := vma{start: addr, end: addr + length, prot: o.Prot, maxProt: o.MaxProt, shared: o.Shared, name: o.Name,
		file: o.File, cache: o.Cache, pages: o.Pages, fileOff: o.Offset, locked: m.lockFuture || o.Locked,
		growsDown: o.GrowsDown, tracker: o.Tracker}
	v.anonLazy = v.anonymousPrivate() && lazyAnonymous(length)
	backEnd := v.end
	switch {
	case v.anonLazy:
		backEnd = v.start
	case v.lazy():
		backEnd = min(v.end, v.start+eagerBacking)
	}
	var pmas []pma
	if backEnd > v.start {
		var err error
		if pmas, err = m.backLocked(&v, v.start, backEnd); err != nil {
			return 0, err
		}
	}
	// A fixed mapping replaces the old one on the host in the same step,
	// where the new one has pages yet.
	backed := uintptr(0)
	for _, p := range pmas {
		backed += p.length()
	}
	m.removeLocked(addr, addr+length, backed < length)
	m.vmas.insert(v)
	m.insertPmasLocked(&v, pmas)
	track([]vma{v}, 1)
	if o.Populate || v.locked {
		m.populateMappingLocked(&v)
	}
	return addr, nil
}

// backLocked makes the pages for [lo, hi) of v: fresh zero pages, pages of
// the file's cache or the file's own (shared, copy-on-write for a private
// mapping) or pages holding a copy of the file. Pages wholly past the end
// of the file are marked so that touching them raises SIGBUS, but for
// the file's own, which are left unbacked.
func (m *MemoryManager) backLocked(v *vma, lo, hi uintptr) ([]pma, error) {
	fileOff := v.fileOff + uint64(lo-v.start)
	if v.pages != nil {
		return m.filePagesLocked(v, lo, hi)
	}
	var out []pma
	if v.cache != nil {
		base, n, err := v.cache.pages()
		switch {
		case err == nil:
			if fileOff < n {
				k := min(uint64(hi-lo), n-fileOff)
				p := pma{start: lo, end: lo + uintptr(k), off: base + fileOff, cow: !v.shared}
				if p.cow && v.prot&platform.ProtWrite != 0 && k <= cowChunk {
					// A small private writable mapping (a library's
					// data) is written at once, and its first write
					// fault would copy all of it: copy it now and
					// save the guest that fault.
					off, err := m.copyPagesLocked(&p)
					if err != nil {
						return nil, err
					}
					p.off, p.cow = off, false
				} else {
					m.mf.IncRef(p.off, k)
				}
				out = append(out, p)
				lo += uintptr(k)
			}
			if lo == hi {
				return out, nil
			}
			rest, err := m.zeroPagesLocked(lo, hi, true)
			if err != nil {
				m.dropPmas(out)
				return nil, err
			}
			return append(out, rest...), nil
		case err != errNotCached:
			return nil, err
		}
	}
	if v.file == nil {
		return m.zeroPagesLocked(lo, hi, false)
	}
	off, err := m.mf.Allocate(uint64(hi - lo))
	if err != nil {
		return nil, unix.ENOMEM
	}
	n, err := v.file.ReadAt(m.mf.Slice(off, uint64(hi-lo)), int64(fileOff))
	if err != nil && err != io.EOF {
		m.mf.DecRef(off, uint64(hi-lo))
		return nil, err
	}
	// What a short read left is past the end of the file: its pages, but
	// the one holding the end, raise SIGBUS.
	filePages := (uintptr(n) + PageSize - 1) &^ (PageSize - 1)
	if err == nil || lo+filePages >= hi {
		return []pma{{start: lo, end: hi, off: off}}, nil
	}
	if filePages == 0 {
		// All of it is past the end (an offset beyond it): one pma, not an
		// empty one before it, which the platform cannot map.
		return []pma{{start: lo, end: hi, off: off, pastEOF: true}}, nil
	}
	mid := lo + filePages
	return []pma{{start: lo, end: mid, off: off}, {start: mid, end: hi, off: off + uint64(filePages), pastEOF: true}}, nil
}

// filePagesLocked backs [lo, hi) of v with the file's own pages, shared
// (or copy-on-write for a private mapping), as far as the file now
// reaches: a mapping sees its file grow, and pages past the end stay
// unbacked, so that touching them raises SIGBUS.
func (m *MemoryManager) filePagesLocked(v *vma, lo, hi uintptr) ([]pma, error) {
	fileOff := v.fileOff + uint64(lo-v.start)
	size := (uint64(v.pages.Size()) + PageSize - 1) &^ (PageSize - 1)
	if fileOff >= size {
		return nil, nil
	}
	runs, err := v.pages.mapRange(fileOff, min(uint64(hi-lo), size-fileOff))
	if err != nil {
		return nil, unix.ENOMEM
	}
	out := make([]pma, 0, len(runs))
	for _, r := range runs {
		out = append(out, pma{start: lo, end: lo + uintptr(r.len), off: r.off, cow: !v.shared})
		lo += uintptr(r.len)
	}
	return out, nil
}

// zeroPagesLocked returns fresh zero pages for [lo, hi).
func (m *MemoryManager) zeroPagesLocked(lo, hi uintptr, pastEOF bool) ([]pma, error) {
	off, err := m.mf.Allocate(uint64(hi - lo))
	if err != nil {
		return nil, unix.ENOMEM
	}
	return []pma{{start: lo, end: hi, off: off, pastEOF: pastEOF}}, nil
}

func (m *MemoryManager) dropPmas(ps []pma) {
	for _, p := range ps {
		m.mf.DecRef(p.off, uint64(p.length()))
	}
}

// insertPmasLocked records pmas of v and maps them on the host. A pma
// that continues the one before it in v, in the memory file too and with
// the same marks, is joined to it: a lazy mapping touched in order stays
// one pma.
func (m *MemoryManager) insertPmasLocked(v *vma, ps []pma) {
	for i := range ps {
		m.hostMap(v, &ps[i])
		p := ps[i]
		k := m.pmas.find(p.start)
		if k > 0 {
			if prev := &m.pmas.s[k-1]; prev.end == p.start && prev.start >= v.start &&
				prev.off+uint64(prev.length()) == p.off && prev.cow == p.cow && prev.pastEOF == p.pastEOF {
				prev.end = p.end
				continue
			}
		}
		m.pmas.insert(p)
	}
}

// findRange finds a free range of length bytes: at hint if it is free, else
// the highest one below mmapBase, else the lowest one above it.
func (m *MemoryManager) findRange(hint, length uintptr) (uintptr, bool) {
	s := m.vmas.s
	if hint >= MinAddr && hint+length > hint && hint+length <= m.maxAddr && m.vmas.free(hint, hint+length) {
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
	for i := m.vmas.find(start); ; i++ {
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

// MAP_32BIT's range on x86-64: the second GiB, so that the mapping's
// addresses fit in 31 bits (the flag was made for code and stacks a 32-bit
// mode or a sign-extended 32-bit pointer reaches).
const (
	Low2GStart = 0x40000000
	Low2GEnd   = 0x80000000
)

// findLow2GLocked places a MAP_32BIT mapping as Linux's bottom-up search
// does: at the hint if the range there is free and ends by Low2GEnd, else in
// the lowest gap of [Low2GStart, Low2GEnd). Linux randomizes the search's
// start within 32 MiB when the process randomizes its layout; moat does not.
func (m *MemoryManager) findLow2GLocked(hint, length uintptr) (uintptr, bool) {
	if length > Low2GEnd-Low2GStart {
		return 0, false
	}
	if hint >= MinAddr && hint+length > hint && hint+length <= Low2GEnd && m.vmas.free(hint, hint+length) {
		return hint, true
	}
	s := m.vmas.s
	start := uintptr(Low2GStart)
	for i := m.vmas.find(start); start+length <= Low2GEnd; i++ {
		gapEnd := uintptr(Low2GEnd)
		if i < len(s) && s[i].start < gapEnd {
			gapEnd = s[i].start
		}
		if gapEnd > start && gapEnd-start >= length {
			return start, true
		}
		if i >= len(s) || s[i].start >= Low2GEnd {
			return 0, false
		}
		if s[i].end > start {
			start = s[i].end
		}
	}
	return 0, false
}

// removeLocked drops the mappings in [start, end) and their pages. Without
// hostUnmap the caller maps something else there on the host.
func (m *MemoryManager) removeLocked(start, end uintptr, hostUnmap bool) {
	i, j := m.vmas.isolate(start, end)
	if i == j {
		return
	}
	syncShared(m.vmas.s[i:j])
	track(m.vmas.s[i:j], -1)
	m.vmas.remove(i, j)
	pi, pj := m.pmas.isolate(start, end)
	m.dropMappedLocked(m.pmas.s[pi:pj], start, end, hostUnmap)
	m.pmas.remove(pi, pj)
}

// dropMappedLocked drops the pages of ps, which were mapped at [start, end),
// unmapping the range on the host if hostUnmap. While another thread of
// the guest may be running, the host unmap is done first: a page freed
// while the host still maps it here could go to another process and be
// read by that thread. A lone thread is in the sentry now, and its next
// Switch makes the change before it runs.
func (m *MemoryManager) dropMappedLocked(ps []pma, start, end uintptr, hostUnmap bool) {
	if m.users > 1 && m.as != nil {
		m.as.Unmap(start, end-start)
		m.as.Sync()
	} else if hostUnmap {
		m.hostUnmap(start, end-start)
	}
	m.dropPmas(ps)
}

// syncShared writes what shared mappings of cached files hold back to the
// files, as their mappings go: nothing a guest wrote through one is lost.
func syncShared(vs []vma) {
	for k := range vs {
		if v := &vs[k]; v.shared && v.pages != nil {
			v.pages.Sync(int64(v.fileOff), int64(v.length()))
		}
	}
}

// Msync implements msync(2)'s work: the shared mappings of cached files in
// [addr, addr+length) are written back to the files.
func (m *MemoryManager) Msync(addr, length uintptr) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	vi, vj := m.vmas.span(addr, addr+length)
	for _, v := range m.vmas.s[vi:vj] {
		if v.shared && v.pages != nil {
			lo, hi := max(v.start, addr), min(v.end, addr+length)
			if err := v.pages.Sync(int64(v.fileOff+uint64(lo-v.start)), int64(hi-lo)); err != nil {
				return err
			}
		}
	}
	return nil
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
	if m.sealedLocked(addr, addr+length) {
		return unix.EPERM
	}
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
	if m.sealedLocked(addr, end) {
		return unix.EPERM
	}
	vi, vj := m.vmas.span(addr, end)
	for _, v := range m.vmas.s[vi:vj] {
		if prot&^v.maxProt != 0 {
			return unix.EACCES
		}
	}
	vi, vj = m.vmas.isolate(addr, end)
	for k := vi; k < vj; k++ {
		m.vmas.s[k].prot = prot
	}
	m.reprotectLocked(addr, end)
	return nil
}

// reprotectLocked gives the host mappings of [lo, hi) the protection their
// vma and pma call for.
func (m *MemoryManager) reprotectLocked(lo, hi uintptr) {
	pi, pj := m.pmas.isolate(lo, hi)
	for k := pi; k < pj; k++ {
		p := &m.pmas.s[k]
		v, _ := m.vmas.lookup(p.start)
		m.hostProtect(v, p)
	}
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
		if !m.vmas.free(oldEnd, newEnd) || !m.growOKLocked(newEnd-oldEnd) {
			return m.brk
		}
		v := vma{start: oldEnd, end: newEnd, prot: platform.ProtRead | platform.ProtWrite, maxProt: protAll,
			name: "[heap]", locked: m.lockFuture, anonLazy: lazyAnonymous(newEnd - oldEnd)}
		var ps []pma
		if !v.anonLazy {
			var err error
			if ps, err = m.backLocked(&v, v.start, v.end); err != nil {
				return m.brk
			}
		}
		m.vmas.insert(v)
		m.insertPmasLocked(&v, ps)
	case newEnd < oldEnd:
		if m.sealedLocked(newEnd, oldEnd) {
			return m.brk
		}
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

// Mremap implements mremap(2): pages move with the mapping, nothing is
// copied.
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
	if m.sealedLocked(oldAddr, oldAddr+oldLen) || (flags&mremapFixed != 0 && m.sealedLocked(newAddr, newAddr+newLen)) {
		return 0, unix.EPERM
	}
	like := *v
	if flags&mremapFixed == 0 {
		if newLen <= oldLen {
			m.removeLocked(oldAddr+newLen, oldAddr+oldLen, true)
			return oldAddr, nil
		}
		if oldAddr+newLen > oldAddr && oldAddr+newLen <= m.maxAddr && m.vmas.free(oldAddr+oldLen, oldAddr+newLen) {
			return oldAddr, m.growLocked(oldAddr+oldLen, oldAddr+newLen, like)
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
	keep := min(oldLen, newLen)
	m.removeLocked(oldAddr+keep, oldAddr+oldLen, true)
	m.moveLocked(oldAddr, keep, dst)
	if newLen > keep {
		last, _ := m.vmas.lookup(dst + keep - 1)
		if err := m.growLocked(dst+keep, dst+newLen, *last); err != nil {
			return 0, err
		}
	}
	return dst, nil
}

// moveLocked moves the mappings of [from, from+n) to dst, pages and all.
func (m *MemoryManager) moveLocked(from, n, dst uintptr) {
	vi, vj := m.vmas.isolate(from, from+n)
	vmas := append([]vma(nil), m.vmas.s[vi:vj]...)
	m.vmas.remove(vi, vj)
	pi, pj := m.pmas.isolate(from, from+n)
	pmas := append([]pma(nil), m.pmas.s[pi:pj]...)
	m.pmas.remove(pi, pj)
	m.hostUnmap(from, n)
	for _, v := range vmas {
		v.start, v.end = dst+(v.start-from), dst+(v.end-from)
		m.vmas.insert(v)
	}
	for _, p := range pmas {
		p.start, p.end = dst+(p.start-from), dst+(p.end-from)
		v, _ := m.vmas.lookup(p.start)
		m.pmas.insert(p)
		m.hostMap(v, &p)
	}
}

// growLocked maps [start, end) with like's attributes, like ending at
// start: a lazy mapping of a file goes on into the file, as on Linux,
// backed when touched; anything else grows by fresh zero pages, backed
// when touched if the growth is a lazy anonymous mapping's length.
func (m *MemoryManager) growLocked(start, end uintptr, like vma) error {
	if !m.growOKLocked(end - start) {
		return unix.ENOMEM
	}
	if like.pages == nil && !like.shared && lazyAnonymous(end-start) {
		like.file, like.cache, like.tracker, like.anonLazy = nil, nil, nil, true
	}
	if like.lazy() {
		like.fileOff += uint64(start - like.start)
		like.start, like.end = start, end
		m.vmas.insert(like)
		track([]vma{like}, 1)
		return nil
	}
	like.start, like.end = start, end
	like.file, like.cache, like.pages, like.tracker = nil, nil, nil, nil // new pages are zero, whatever came before
	like.anonLazy = false
	ps, err := m.backLocked(&like, start, end)
	if err != nil {
		return unix.ENOMEM
	}
	m.vmas.insert(like)
	m.insertPmasLocked(&like, ps)
	return nil
}

// zeroInPlaceLocked zeroes the pages of anonymous private vma v where
// they are, if this address space alone holds them: the host mapping stays
// and needs no change (glibc gives back every exiting thread's stack this
// way). It reports false, changing nothing, otherwise.
func (m *MemoryManager) zeroInPlaceLocked(v *vma) bool {
	if v.file != nil || v.cache != nil || v.pages != nil {
		return false
	}
	pi, pj := m.pmas.span(v.start, v.end)
	for k := pi; k < pj; k++ {
		p := &m.pmas.s[k]
		if p.cow || !m.mf.Exclusive(p.off, uint64(p.length())) {
			return false
		}
	}
	pi, pj = m.pmas.isolate(v.start, v.end)
	for k := pi; k < pj; k++ {
		m.mf.Zero(m.pmas.s[k].off, uint64(m.pmas.s[k].length()))
	}
	return true
}

// DontNeed implements madvise(MADV_DONTNEED): the pages of a private
// mapping in [addr, addr+length) go back to what a fresh mapping holds
// (zeros, or the file's contents); shared mappings keep theirs.
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
	if m.discardSealedLocked(addr, end) {
		return unix.EPERM
	}
	vi, vj := m.vmas.isolate(addr, end)
	for k := vi; k < vj; k++ {
		v := m.vmas.s[k]
		if v.shared {
			continue
		}
		if m.zeroInPlaceLocked(&v) {
			continue
		}
		if v.lazy() {
			// Backed again from the file when next touched.
			pi, pj := m.pmas.isolate(v.start, v.end)
			m.dropMappedLocked(m.pmas.s[pi:pj], v.start, v.end, true)
			m.pmas.remove(pi, pj)
			continue
		}
		ps, err := m.backLocked(&v, v.start, v.end)
		if err != nil {
			return err
		}
		pi, pj := m.pmas.isolate(v.start, v.end)
		m.dropMappedLocked(m.pmas.s[pi:pj], v.start, v.end, false)
		m.pmas.remove(pi, pj)
		m.insertPmasLocked(&v, ps)
	}
	return nil
}
