package mm

import "github.com/moat-sandbox/moat/platform"

// The host side of the mappings: the platform address space mirrors the
// pmas. A memory manager made for an exec's new image has no address space
// until the point of no return (Attach): the loader's mappings live in the
// pmas alone until then, and Attach maps them all at once.

// hostMap maps pma p of vma v in the address space.
func (m *MemoryManager) hostMap(v *vma, p *pma) {
	if m.as != nil {
		m.as.MapFile(p.start, p.off, p.length(), hostProt(v, p))
	}
}

// hostUnmap removes [start, start+length) from the address space.
func (m *MemoryManager) hostUnmap(start, length uintptr) {
	if m.as != nil {
		m.as.Unmap(start, length)
	}
}

// hostProtect gives pma p of vma v the protection they call for.
func (m *MemoryManager) hostProtect(v *vma, p *pma) {
	if m.as != nil {
		m.as.Protect(p.start, p.length(), hostProt(v, p))
	}
}

// Attach gives a memory manager made without an address space the empty
// address space as, and maps every page it has so far in it.
func (m *MemoryManager) Attach(as platform.AddressSpace) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.as = as
	vi := 0
	for k := range m.pmas.s {
		p := &m.pmas.s[k]
		for m.vmas.s[vi].end <= p.start {
			vi++
		}
		m.hostMap(&m.vmas.s[vi], p)
	}
}

// Recycle drops the last user of m, as DecUsers does, but keeps its address
// space, emptied, and returns it for the memory of the next program the
// process runs: execve then needs no new address space and no new thread.
// If other users remain, it changes nothing and returns nil.
func (m *MemoryManager) Recycle() platform.AddressSpace {
	m.mu.Lock()
	if m.users != 1 || m.as == nil {
		m.mu.Unlock()
		return nil
	}
	m.users = 0
	m.dropPmas(m.pmas.s)
	track(m.vmas.s, -1)
	m.pmas.s, m.vmas.s = nil, nil
	as := m.as
	m.as = nil
	as.Unmap(0, m.maxAddr)
	m.mu.Unlock()
	m.tellParent()
	return as
}
