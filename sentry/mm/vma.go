package mm

import "github.com/moat-sandbox/moat/platform"

// vma is one mapping as the guest made it: an address range with its
// protection and what it maps. The pages behind it are its pmas.
type vma struct {
	start, end uintptr
	prot       platform.Prot
	maxProt    platform.Prot // what mprotect may grant (a read-only file caps it)
	shared     bool          // MAP_SHARED: a fork shares the pages instead of copying them
	locked     bool          // mlock'ed (VM_LOCKED)
	onFault    bool          // locked with MLOCK_ONFAULT (VM_LOCKONFAULT)
	sealed     bool          // mseal'ed (VM_SEALED): never unmapped, moved or reprotected
	growsDown  bool          // a stack: a fault just below it grows it (VM_GROWSDOWN)
	name       string        // for /proc/<pid>/maps: a path, "[heap]", "[stack]" or ""
	file       FileSource    // the file the pages came from, nil for anonymous memory
	cache      *FileCache    // the file's page cache, if its pages are shared through one
	pages      *FilePages    // the file's own pages, if it keeps its data in the memory file
	anonLazy   bool          // large private anonymous memory, backed as touched (lazy.go)
	fileOff    uint64        // file offset of start
	tracker    Tracker       // counts the mappings of what it maps (shm.go), or nil
}

func (v *vma) bounds() (uintptr, uintptr) { return v.start, v.end }

func (v *vma) splitAt(addr uintptr) vma {
	hi := *v
	hi.start = addr
	hi.fileOff = v.fileOff + uint64(addr-v.start)
	v.end = addr
	if hi.tracker != nil {
		hi.tracker.Mapped(1) // one mapping more, as a split vma is on Linux
	}
	return hi
}

func (v *vma) length() uintptr { return v.end - v.start }

// anonymousPrivate reports whether v is private anonymous memory: its
// pages are its own from the start, zero until written.
func (v *vma) anonymousPrivate() bool {
	return !v.shared && v.file == nil && v.cache == nil && v.pages == nil
}

type vmaSet = rangeSet[vma, *vma]

// pma is a range of a vma's pages: where in the memory file they are.
type pma struct {
	start, end uintptr
	off        uint64 // memory-file offset of start
	// cow marks pages shared with another address space or a file's cache
	// that this one must copy before it writes them; they are mapped
	// without write permission until then.
	cow bool
	// pastEOF marks pages of a file mapping wholly past the file's end:
	// mapped without access, and touching them raises SIGBUS.
	pastEOF bool
}

func (p *pma) bounds() (uintptr, uintptr) { return p.start, p.end }

func (p *pma) splitAt(addr uintptr) pma {
	hi := *p
	hi.start = addr
	hi.off = p.off + uint64(addr-p.start)
	p.end = addr
	return hi
}

func (p *pma) length() uintptr { return p.end - p.start }

type pmaSet = rangeSet[pma, *pma]

// hostProt is the protection the platform maps p with under v.
func hostProt(v *vma, p *pma) platform.Prot {
	if p.pastEOF {
		return 0
	}
	if p.cow {
		return v.prot &^ platform.ProtWrite
	}
	return v.prot
}
