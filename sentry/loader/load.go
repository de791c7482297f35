package loader

import (
	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/platform"
	"github.com/moat-sandbox/moat/sentry/mm"
)

const pageSize = mm.PageSize

// Image is a program loaded into an address space.
type Image struct {
	Entry     uintptr // where the program starts: the interpreter's entry if it has one
	ExecEntry uintptr // AT_ENTRY: the executable's own entry point
	Phdr      uintptr // AT_PHDR
	Phnum     uintptr
	Base      uintptr // AT_BASE: the interpreter's load address, or 0
	ExecBase  uintptr // where the executable itself was loaded
	BrkStart  uintptr
}

// Opener opens the interpreter an executable names.
type Opener func(path string) (File, error)

// dynBase is where a position-independent executable goes (Linux's
// ELF_ET_DYN_BASE: two thirds of the address space, scaled to the guest's),
// and interpBase where its interpreter goes.
func dynBase(max uintptr) uintptr    { return (max / 3 * 2) &^ (1<<21 - 1) }
func interpBase(max uintptr) uintptr { return (max / 8 * 7) &^ (1<<21 - 1) }

// Load maps the executable f, and its interpreter if it names one, into m.
// Every check comes before the first mapping: Linux's own come before it
// commits to the exec where they can, in this order.
func Load(m *mm.MemoryManager, f File, name string, open Opener) (Image, error) {
	info, err := parseELF(f)
	if err != nil {
		return Image{}, err
	}
	var (
		ifile File
		iinfo *elfInfo
	)
	if info.hasInterp {
		if open == nil {
			return Image{}, unix.ENOEXEC
		}
		if ifile, err = open(info.interp); err != nil {
			return Image{}, err
		}
		// An interpreter that is no ELF file for this machine is a bad
		// library; its type, its segments and its own PT_INTERP Linux
		// reads only later, or not at all.
		if iinfo, err = readELF(ifile, false); err == unix.ENOEXEC {
			return Image{}, unix.ELIBBAD
		} else if err != nil {
			return Image{}, err
		}
	}
	if err := checkLoads(info); err != nil {
		return Image{}, err
	}
	if iinfo != nil && (iinfo.typ != etExec && iinfo.typ != etDyn || checkLoads(iinfo) != nil) {
		return Image{}, unix.ELIBBAD
	}

	base, end, err := mapSegments(m, f, info, dynBase(m.MaxAddr()), name)
	if err != nil {
		return Image{}, err
	}
	img := Image{Entry: base + uintptr(info.entry), ExecEntry: base + uintptr(info.entry), ExecBase: base, Phnum: uintptr(len(info.phdrs))}
	img.Phdr = phdrAddr(info, base)
	img.BrkStart = end
	if iinfo != nil {
		// An ET_EXEC interpreter goes where it is linked, with a base of 0.
		ibase, _, err := mapSegments(m, ifile, iinfo, interpBase(m.MaxAddr()), info.interp)
		if err != nil {
			return Image{}, err
		}
		img.Base = ibase
		img.Entry = ibase + uintptr(iinfo.entry)
	}
	return img, nil
}

// phdrAddr finds the program headers in memory (AT_PHDR) as Linux does:
// in the last PT_LOAD segment that holds e_phoff in the file (PT_PHDR is
// not read), or at the load bias if none does.
func phdrAddr(info *elfInfo, base uintptr) uintptr {
	addr := base
	for _, ph := range info.phdrs {
		if ph.typ == ptLoad && ph.off <= info.phoff && info.phoff < ph.off+ph.filesz {
			addr = base + uintptr(ph.vaddr+info.phoff-ph.off)
		}
	}
	return addr
}

// maxAlignment is the largest p_align of the PT_LOAD segments that is a
// power of two, at least a page (Linux's maximum_alignment).
func maxAlignment(info *elfInfo) uint64 {
	align := uint64(pageSize)
	for _, ph := range info.phdrs {
		if ph.typ == ptLoad && ph.align&(ph.align-1) == 0 {
			align = max(align, ph.align)
		}
	}
	return align
}

// mapSegments maps every PT_LOAD segment and returns the load bias and the
// page-rounded end of the highest segment.
func mapSegments(m *mm.MemoryManager, f File, info *elfInfo, dynHint uintptr, name string) (uintptr, uintptr, error) {
	var lo, hi uint64 = ^uint64(0), 0
	for _, ph := range info.phdrs {
		if ph.typ == ptLoad {
			lo = min(lo, ph.vaddr&^(pageSize-1))
			hi = max(hi, ph.vaddr+ph.memsz)
		}
	}
	if hi == 0 {
		return 0, 0, unix.ENOEXEC
	}
	hi = (hi + pageSize - 1) &^ (pageSize - 1)
	span := uintptr(hi - lo)
	var bias uintptr
	if info.typ == etDyn {
		// Find room for the whole span, so the segments keep their
		// distances; the gaps between them stay unmapped, as Linux
		// leaves them. The bias is a multiple of the segments' largest
		// alignment, as Linux's maximum_alignment makes it: room for the
		// span and that much more is found, and the bias rounded up in it.
		align := uintptr(maxAlignment(info))
		room := span + align - pageSize
		if room < span {
			return 0, 0, unix.ENOMEM // an alignment beyond the address space
		}
		addr, err := m.MMap(mm.MMapOpts{Addr: dynHint, Length: room})
		if err != nil {
			return 0, 0, err
		}
		if err := m.Munmap(addr, room); err != nil {
			return 0, 0, err
		}
		bias = (addr - uintptr(lo) + align - 1) &^ (align - 1)
	} else if uintptr(hi) > m.MaxAddr() || uintptr(lo) < mm.MinAddr {
		return 0, 0, unix.ENOMEM
	}
	for _, ph := range info.phdrs {
		if ph.typ != ptLoad || ph.memsz == 0 {
			continue
		}
		prot := protOf(ph.flags)
		start := bias + uintptr(ph.vaddr&^(pageSize-1))
		pageOff := ph.vaddr % pageSize
		fileEnd := bias + uintptr(ph.vaddr+ph.filesz)
		memEnd := bias + uintptr(ph.vaddr+ph.memsz)
		// File pages: [start, round_up(fileEnd)), shared through the file's
		// page cache when it has one; the rest of the last page, past the
		// segment's data, is cleared.
		if ph.filesz > 0 {
			o := mm.MMapOpts{Addr: start, Length: uintptr(pageOff + ph.filesz), Prot: prot, Fixed: true,
				File: f, Offset: ph.off - pageOff, Name: name}
			if c, ok := f.(mm.Cacheable); ok {
				o.Cache = c.FileCache()
			}
			if _, err := m.MMap(o); err != nil {
				return 0, 0, err
			}
			if tail := (pageSize - uint64(fileEnd)%pageSize) % pageSize; tail > 0 && ph.memsz > ph.filesz {
				if err := m.ZeroPrivileged(fileEnd, int(tail)); err != nil {
					return 0, 0, err
				}
			}
		}
		// The rest of bss: anonymous pages.
		bssStart := (fileEnd + pageSize - 1) &^ (pageSize - 1)
		if ph.filesz == 0 {
			bssStart = start
		}
		if memEnd > bssStart {
			if _, err := m.MMap(mm.MMapOpts{Addr: bssStart, Length: memEnd - bssStart, Prot: prot, Fixed: true}); err != nil {
				return 0, 0, err
			}
		}
	}
	return bias, bias + uintptr(hi), nil
}

func protOf(flags uint32) platform.Prot {
	var p platform.Prot
	if flags&pfR != 0 {
		p |= platform.ProtRead
	}
	if flags&pfW != 0 {
		p |= platform.ProtWrite
	}
	if flags&pfX != 0 {
		p |= platform.ProtExec
	}
	return p
}
