package mm

import (
	"reflect"

	"golang.org/x/sys/unix"
)

// RemapFilePages implements remap_file_pages(2) as Linux has since 4.0,
// which emulates the old nonlinear mappings with mmap: [start,
// start+size) (page aligned, within the address space) is mapped anew
// from page pgoff of the file of the shared mapping at start, with its
// protection, MAP_FIXED over the old pages. The range must lie in shared
// mappings of that one file, back to back: EINVAL otherwise, as for a
// private or an absent mapping. An anonymous shared mapping has no file
// here to map again (Linux's has a shmem one): EINVAL too.
func (m *MemoryManager) RemapFilePages(start, size uintptr, pgoff uint64) error {
	m.mu.RLock()
	v, ok := m.vmas.lookup(start)
	if !ok || !v.shared || v.file == nil && v.pages == nil && v.cache == nil {
		m.mu.RUnlock()
		return unix.EINVAL
	}
	o := MMapOpts{Addr: start, Length: size, Prot: v.prot, MaxProt: v.maxProt, Fixed: true, Shared: true,
		File: v.file, Cache: v.cache, Pages: v.pages, Offset: pgoff * PageSize, Name: v.name, Tracker: v.tracker}
	locked := v.locked
	for end := v.end; end < start+size; {
		n, ok := m.vmas.lookup(end)
		if !ok || n.start != end || !sameFileMapping(v, n) {
			m.mu.RUnlock()
			return unix.EINVAL
		}
		end = n.end
	}
	m.mu.RUnlock()
	if _, err := m.MMap(o); err != nil {
		return err
	}
	if locked {
		// MAP_LOCKED, as Linux adds for a locked mapping.
		return m.Mlock(start, size, true, false)
	}
	return nil
}

// sameFileMapping reports whether two vmas map the same file the same
// way, as Linux asks the ones a remap spans to.
func sameFileMapping(a, b *vma) bool {
	return a.shared == b.shared && a.prot == b.prot && a.locked == b.locked &&
		a.pages == b.pages && a.cache == b.cache && sameSource(a.file, b.file)
}

// sameSource compares two file sources without panicking on a type
// that cannot be compared.
func sameSource(a, b FileSource) bool {
	ta, tb := reflect.TypeOf(a), reflect.TypeOf(b)
	if ta != tb {
		return false
	}
	return ta == nil || ta.Comparable() && a == b
}
