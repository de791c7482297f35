package mm

import "github.com/moat-sandbox/moat/platform"

// MapInfo is one mapping as /proc/<pid>/maps shows it.
type MapInfo struct {
	Start, End uintptr
	Prot       platform.Prot
	MaxProt    platform.Prot
	Shared     bool
	Locked     bool
	GrowsDown  bool
	Offset     uint64 // file offset, 0 for anonymous memory
	Name       string
}

// Maps lists the mappings in address order. Neighbours that Linux would
// hold as one vma (the same attributes and file, the file's offsets going
// on) are shown as one, as Linux merges them: a mapping grown in place by
// mremap, or locked and unlocked again in parts, is one line again.
func (m *MemoryManager) Maps() []MapInfo {
	m.mu.RLock()
	defer m.mu.RUnlock()
	out := make([]MapInfo, 0, len(m.vmas.s))
	for i := range m.vmas.s {
		v := &m.vmas.s[i]
		if i > 0 && len(out) > 0 && mergeable(&m.vmas.s[i-1], v) {
			out[len(out)-1].End = v.end
			continue
		}
		mi := MapInfo{Start: v.start, End: v.end, Prot: v.prot, MaxProt: v.maxProt, Shared: v.shared,
			Locked: v.locked, GrowsDown: v.growsDown, Name: v.name}
		if v.file != nil {
			mi.Offset = v.fileOff
		}
		out = append(out, mi)
	}
	return out
}

// mergeable reports whether vma b continues a as part of one Linux vma.
func mergeable(a, b *vma) bool {
	if a.end != b.start || a.prot != b.prot || a.maxProt != b.maxProt || a.shared != b.shared ||
		a.locked != b.locked || a.onFault != b.onFault || a.sealed != b.sealed || a.growsDown != b.growsDown || a.name != b.name ||
		a.file != b.file || a.cache != b.cache || a.pages != b.pages || a.tracker != nil || b.tracker != nil {
		return false
	}
	return a.file == nil && a.pages == nil || a.fileOff+uint64(a.length()) == b.fileOff
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
