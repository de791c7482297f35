package memfile

import "sort"

// Pages are reference counted so that address spaces can share them: a
// fork shares every private page until one side writes it, and a file's
// cached pages are shared by every mapping of the file. An allocated page
// has one reference; only ranges with more are recorded, in shared. A host
// file's pages (hostfile.go) are outside the count: never freed, always
// shared.

// refSeg is a range of pages that all have count references (count >= 2).
type refSeg struct {
	off, len uint64
	count    int32
}

// IncRef adds a reference to every page of [off, off+length).
func (f *File) IncRef(off, length uint64) {
	if isHost(off) {
		return // host files' pages are not counted (hostfile.go)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.splitRefs(off)
	f.splitRefs(off + length)
	// Walk the range: existing segments gain one, gaps (count 1) become
	// segments of 2.
	var added []refSeg
	pos := off
	i := sort.Search(len(f.shared), func(i int) bool { return f.shared[i].off >= off })
	for ; i < len(f.shared) && f.shared[i].off < off+length; i++ {
		s := &f.shared[i]
		if s.off > pos {
			added = append(added, refSeg{pos, s.off - pos, 2})
		}
		s.count++
		pos = s.off + s.len
	}
	if pos < off+length {
		added = append(added, refSeg{pos, off + length - pos, 2})
	}
	f.insertRefs(added)
}

// DecRef drops a reference from every page of [off, off+length) and frees
// the pages that have none left.
func (f *File) DecRef(off, length uint64) {
	if isHost(off) {
		return
	}
	var free []refSeg
	f.mu.Lock()
	f.splitRefs(off)
	f.splitRefs(off + length)
	pos := off
	i := sort.Search(len(f.shared), func(i int) bool { return f.shared[i].off >= off })
	j := i
	for ; j < len(f.shared) && f.shared[j].off < off+length; j++ {
		s := &f.shared[j]
		if s.off > pos {
			free = append(free, refSeg{pos, s.off - pos, 0})
		}
		s.count--
		pos = s.off + s.len
	}
	if pos < off+length {
		free = append(free, refSeg{pos, off + length - pos, 0})
	}
	// Segments down to one reference are no longer recorded.
	k := i
	for x := i; x < j; x++ {
		if f.shared[x].count >= 2 {
			f.shared[k] = f.shared[x]
			k++
		}
	}
	f.shared = append(f.shared[:k], f.shared[j:]...)
	f.mu.Unlock()
	for _, s := range free {
		f.Free(s.off, s.len)
	}
}

// Exclusive reports whether every page of [off, off+length) has a single
// reference, so that its holder may write it in place.
func (f *File) Exclusive(off, length uint64) bool {
	if isHost(off) {
		return false // shared with the host's page cache: never written in place
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	i := sort.Search(len(f.shared), func(i int) bool { return f.shared[i].off+f.shared[i].len > off })
	return i == len(f.shared) || f.shared[i].off >= off+length
}

// splitRefs makes addr a segment boundary.
func (f *File) splitRefs(addr uint64) {
	i := sort.Search(len(f.shared), func(i int) bool { return f.shared[i].off+f.shared[i].len > addr })
	if i == len(f.shared) || f.shared[i].off >= addr {
		return
	}
	s := f.shared[i]
	lo := refSeg{s.off, addr - s.off, s.count}
	hi := refSeg{addr, s.off + s.len - addr, s.count}
	f.shared = append(f.shared, refSeg{})
	copy(f.shared[i+2:], f.shared[i+1:])
	f.shared[i], f.shared[i+1] = lo, hi
}

// insertRefs adds non-overlapping segments, keeping the list sorted and
// joining each to a neighbour it continues with the same count: pages
// shared a window at a time (a lazy mapping backed as it is touched, in
// order) stay one segment, and the list short.
func (f *File) insertRefs(segs []refSeg) {
	for _, seg := range segs {
		i := sort.Search(len(f.shared), func(i int) bool { return f.shared[i].off >= seg.off })
		joinsLeft := i > 0 && f.shared[i-1].off+f.shared[i-1].len == seg.off && f.shared[i-1].count == seg.count
		joinsRight := i < len(f.shared) && seg.off+seg.len == f.shared[i].off && f.shared[i].count == seg.count
		switch {
		case joinsLeft && joinsRight:
			f.shared[i-1].len += seg.len + f.shared[i].len
			f.shared = append(f.shared[:i], f.shared[i+1:]...)
		case joinsLeft:
			f.shared[i-1].len += seg.len
		case joinsRight:
			f.shared[i].off, f.shared[i].len = seg.off, f.shared[i].len+seg.len
		default:
			f.shared = append(f.shared, refSeg{})
			copy(f.shared[i+1:], f.shared[i:])
			f.shared[i] = seg
		}
	}
}
