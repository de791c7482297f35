package mm

import "golang.org/x/sys/unix"

// System V shared memory: a segment is mapped as any file that keeps its
// pages in the memory file (MMapOpts.Pages), with a Tracker that counts
// its mappings for shm_nattch, and shmdt finds the mappings to remove by
// their tracker.

// Tracker counts the mappings of what it stands for: Mapped(1) for each
// vma made of it, by mmap, a split (mprotect, a partial munmap) or fork,
// and Mapped(-1) for each that goes, as Linux counts a segment's vmas.
// It is called with the memory manager's lock held and must not call
// back into it.
type Tracker interface {
	Mapped(delta int)
}

// track tells the trackers of vs that they gained or lost them.
func track(vs []vma, delta int) {
	for k := range vs {
		if t := vs[k].tracker; t != nil {
			t.Mapped(delta)
		}
	}
}

// Shmdt removes the System V shared memory attached at addr, as Linux's
// shmdt does: the first mapping at or above addr whose offset in its
// segment is its distance from addr names the segment; that one and every
// other mapping of the segment that ends within the segment's size from
// addr, at its own offset from addr, are unmapped. size gives a
// tracker's segment size. Shmdt returns the segment's tracker, or EINVAL
// if nothing was attached at addr.
func (m *MemoryManager) Shmdt(addr uintptr, size func(Tracker) uintptr) (Tracker, error) {
	if addr%PageSize != 0 {
		return nil, unix.EINVAL
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	attachedAt := func(v *vma) bool { return v.start >= addr && uint64(v.start-addr) == v.fileOff }
	var found Tracker
	var limit uintptr
	var ranges [][2]uintptr
	for i := m.vmas.find(addr); i < len(m.vmas.s); i++ {
		v := &m.vmas.s[i]
		if found == nil {
			if v.tracker != nil && attachedAt(v) {
				found = v.tracker
				limit = addr + pageRoundUpOr(size(found))
				ranges = append(ranges, [2]uintptr{v.start, v.end})
			}
			continue
		}
		if v.end > limit || v.end < addr {
			break
		}
		if v.tracker == found && attachedAt(v) {
			ranges = append(ranges, [2]uintptr{v.start, v.end})
		}
	}
	if found == nil {
		return nil, unix.EINVAL
	}
	for _, r := range ranges {
		m.removeLocked(r[0], r[1], true)
	}
	return found, nil
}

// pageRoundUpOr rounds n up to a page, saturating.
func pageRoundUpOr(n uintptr) uintptr {
	r, ok := pageRoundUp(n)
	if !ok {
		return ^uintptr(0) &^ (PageSize - 1)
	}
	return r
}
