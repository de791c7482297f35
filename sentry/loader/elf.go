// Package loader loads ELF programs into a fresh guest address space and
// builds the initial stack (arguments, environment, auxiliary vector) that
// Linux gives a new program. Everything it reads comes from the guest's
// file system, so every header field is checked before use.
package loader

import (
	"bytes"
	"encoding/binary"
	"io"
	"math"

	"golang.org/x/sys/unix"
)

// ELF constants used here.
const (
	etExec     = 2
	etDyn      = 3
	emX8664    = 62
	ptLoad     = 1
	ptInterp   = 3
	ptGNUStack = 0x6474e551
	pfX        = 1
	pfW        = 2
	pfR        = 4
	ehdrSize   = 64
	phdrSize   = 56
	// Linux reads at most a page of program headers (ELF_MIN_ALIGN).
	maxPhdrBytes = pageSize
	maxInterpSz  = unix.PathMax
	// maxFileOff is the largest file offset (loff_t): Linux refuses to
	// read or map a file past it.
	maxFileOff = math.MaxInt64
)

// progHeader is one ELF64 program header.
type progHeader struct {
	typ, flags                       uint32
	off, vaddr, filesz, memsz, align uint64
}

// elfInfo is what the loader needs from an ELF file.
type elfInfo struct {
	typ       uint16
	entry     uint64
	phoff     uint64
	phdrs     []progHeader
	hasInterp bool
	interp    string // PT_INTERP's name, which may be empty
}

// File is a file the loader reads an executable from.
type File interface {
	ReadAt(p []byte, off int64) (int, error)
}

// readFull reads exactly len(p) bytes at off. A short read fails with
// short; the file's own errors are passed on.
func readFull(f File, p []byte, off int64, short unix.Errno) error {
	n, err := f.ReadAt(p, off)
	if n == len(p) {
		return nil
	}
	if err == nil || err == io.EOF {
		return short
	}
	return err
}

// readELF reads an ELF file's header and program header table and checks
// what Linux checks of a program and of its interpreter alike before it
// commits to an exec: the magic, the machine, and a table of 56-byte
// entries that fits in a page and can be read whole (ENOEXEC otherwise).
// Linux reads neither EI_CLASS nor EI_DATA nor the versions: the entry
// size is what makes the file ELF64. A program's header may be cut short,
// as Linux reads it into a zeroed buffer; an interpreter's must not (EIO).
func readELF(f File, program bool) (*elfInfo, error) {
	var eh [ehdrSize]byte
	n, err := f.ReadAt(eh[:], 0)
	if n < len(eh) && err != nil && err != io.EOF {
		return nil, err
	}
	if n < len(eh) && !program {
		return nil, unix.EIO
	}
	le := binary.LittleEndian
	if string(eh[:4]) != "\x7fELF" || le.Uint16(eh[18:]) != emX8664 {
		return nil, unix.ENOEXEC
	}
	info := &elfInfo{typ: le.Uint16(eh[16:]), entry: le.Uint64(eh[24:]), phoff: le.Uint64(eh[32:])}
	phentsize, phnum := le.Uint16(eh[54:]), int(le.Uint16(eh[56:]))
	if phentsize != phdrSize || phnum == 0 || phnum*phdrSize > maxPhdrBytes {
		return nil, unix.ENOEXEC
	}
	raw := make([]byte, phnum*phdrSize)
	// Linux's load_elf_phdrs fails alike whatever stopped the read.
	if info.phoff > maxFileOff-uint64(len(raw)) || readFull(f, raw, int64(info.phoff), unix.ENOEXEC) != nil {
		return nil, unix.ENOEXEC
	}
	info.phdrs = make([]progHeader, phnum)
	for i := range info.phdrs {
		b := raw[i*phdrSize:]
		info.phdrs[i] = progHeader{
			typ: le.Uint32(b[0:]), flags: le.Uint32(b[4:]), off: le.Uint64(b[8:]), vaddr: le.Uint64(b[16:]),
			filesz: le.Uint64(b[32:]), memsz: le.Uint64(b[40:]), align: le.Uint64(b[48:]),
		}
	}
	return info, nil
}

// parseELF reads a program's headers: readELF's checks, an executable's
// type, and the interpreter it names.
func parseELF(f File) (*elfInfo, error) {
	info, err := readELF(f, true)
	if err != nil {
		return nil, err
	}
	if info.typ != etExec && info.typ != etDyn {
		return nil, unix.ENOEXEC
	}
	if err := readInterp(f, info); err != nil {
		return nil, err
	}
	return info, nil
}

// readInterp reads the interpreter's name from the first PT_INTERP, as
// Linux does (it ignores any later one): at least 2 and at most PATH_MAX
// bytes ending in a NUL (ENOEXEC), read whole (EIO), from offsets a file
// can have (EINVAL). The name is what comes before the first NUL.
func readInterp(f File, info *elfInfo) error {
	for _, ph := range info.phdrs {
		if ph.typ != ptInterp {
			continue
		}
		if ph.filesz < 2 || ph.filesz > maxInterpSz {
			return unix.ENOEXEC
		}
		if ph.off > maxFileOff-ph.filesz {
			return unix.EINVAL
		}
		s := make([]byte, ph.filesz)
		if err := readFull(f, s, int64(ph.off), unix.EIO); err != nil {
			return err
		}
		if s[len(s)-1] != 0 {
			return unix.ENOEXEC
		}
		info.hasInterp, info.interp = true, string(s[:bytes.IndexByte(s, 0)])
		return nil
	}
	return nil
}

// checkLoads checks that an image has PT_LOAD segments and that each fits
// in the file's offsets and in the address range, maps from the file no
// more than it takes in memory, and has its offset and address equal
// modulo the page size. Linux finds these faults only once it has
// committed to the exec, and kills the process with SIGSEGV; moat, which
// has replaced nothing yet, fails the exec with ENOEXEC instead.
func checkLoads(info *elfInfo) error {
	loads := 0
	for _, ph := range info.phdrs {
		if ph.typ != ptLoad {
			continue
		}
		loads++
		if ph.filesz > ph.memsz || ph.off%pageSize != ph.vaddr%pageSize || ph.vaddr+ph.memsz < ph.vaddr ||
			ph.filesz > maxFileOff || ph.off > maxFileOff-ph.filesz {
			return unix.ENOEXEC
		}
	}
	if loads == 0 {
		return unix.ENOEXEC
	}
	return nil
}
