package mm

import "github.com/moat-sandbox/moat/platform"

// MapInfo is one mapping as /proc/<pid>/maps shows it.
type MapInfo struct {
	Start, End uintptr
	Prot       platform.Prot
	Shared     bool
	Offset     uint64 // file offset, 0 for anonymous memory
	Name       string
}

// Maps lists the mappings in address order.
func (m *MemoryManager) Maps() []MapInfo {
	m.mu.RLock()
	defer m.mu.RUnlock()
	out := make([]MapInfo, len(m.vmas.s))
	for i, v := range m.vmas.s {
		out[i] = MapInfo{Start: v.start, End: v.end, Prot: v.prot, Shared: v.shared, Name: v.name}
		if v.file != nil {
			out[i].Offset = v.fileOff
		}
	}
	return out
}

// Usage is an address space's size, as /proc/<pid>/status reports it.
type Usage struct {
	Size, Locked, Data, Stack uint64 // bytes
}

// Usage sums the mappings.
func (m *MemoryManager) Usage() Usage {
	m.mu.RLock()
	defer m.mu.RUnlock()
	var u Usage
	for _, v := range m.vmas.s {
		n := uint64(v.length())
		u.Size += n
		if v.locked {
			u.Locked += n
		}
		switch {
		case v.name == "[stack]":
			u.Stack += n
		case !v.shared && v.prot&platform.ProtWrite != 0:
			u.Data += n
		}
	}
	return u
}
