package mm

import (
	"sort"

	"github.com/moat-sandbox/moat/platform"
)

// vma is one mapping: a page-aligned address range backed by the
// contiguous memory-file range starting at off.
type vma struct {
	start, end uintptr
	off        uint64
	prot       platform.Prot
	maxProt    platform.Prot // what mprotect may grant (a read-only file caps it)
	shared     bool          // MAP_SHARED
	name       string        // for /proc/<pid>/maps: a path, "[heap]", "[stack]" or ""
	src        FileSource    // the file the pages came from, nil for anonymous memory
	srcOff     uint64        // file offset of start
	locked     bool          // mlock'ed (VM_LOCKED)
}

func (v *vma) length() uintptr { return v.end - v.start }

// vmaSet is the sorted, non-overlapping list of a process's mappings.
type vmaSet []vma

// find returns the index of the first vma that ends above addr.
func (s vmaSet) find(addr uintptr) int {
	return sort.Search(len(s), func(i int) bool { return s[i].end > addr })
}

// lookup returns the vma containing addr.
func (s vmaSet) lookup(addr uintptr) (*vma, bool) {
	i := s.find(addr)
	if i < len(s) && s[i].start <= addr {
		return &s[i], true
	}
	return nil, false
}

// split makes addr a vma boundary if a vma straddles it.
func (s *vmaSet) split(addr uintptr) {
	i := s.find(addr)
	if i == len(*s) || (*s)[i].start >= addr {
		return
	}
	v := (*s)[i]
	lo, hi := v, v
	lo.end = addr
	hi.start = addr
	hi.off = v.off + uint64(addr-v.start)
	hi.srcOff = v.srcOff + uint64(addr-v.start)
	*s = append(*s, vma{})
	copy((*s)[i+2:], (*s)[i+1:])
	(*s)[i], (*s)[i+1] = lo, hi
}

// isolate splits at start and end and returns the index range [i, j) of the
// vmas inside [start, end).
func (s *vmaSet) isolate(start, end uintptr) (int, int) {
	s.split(start)
	s.split(end)
	i := s.find(start)
	j := i
	for j < len(*s) && (*s)[j].start < end {
		j++
	}
	return i, j
}

// insert adds v, which must not overlap any vma.
func (s *vmaSet) insert(v vma) {
	i := s.find(v.start)
	*s = append(*s, vma{})
	copy((*s)[i+1:], (*s)[i:])
	(*s)[i] = v
}

// free reports whether [start, end) overlaps no vma.
func (s vmaSet) free(start, end uintptr) bool {
	i := s.find(start)
	return i == len(s) || s[i].start >= end
}

// covered reports whether every page of [start, end) is mapped.
func (s vmaSet) covered(start, end uintptr) bool {
	for i := s.find(start); start < end; i++ {
		if i == len(s) || s[i].start > start {
			return false
		}
		start = s[i].end
	}
	return true
}
