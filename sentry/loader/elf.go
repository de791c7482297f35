// Package loader loads ELF programs into a fresh guest address space and
// builds the initial stack (arguments, environment, auxiliary vector) that
// Linux gives a new program. Everything it reads comes from the guest's
// file system, so every header field is checked before use.
package loader

import (
	"encoding/binary"
	"io"

	"golang.org/x/sys/unix"
)

// ELF constants used here.
const (
	etExec      = 2
	etDyn       = 3
	emX8664     = 62
	ptLoad      = 1
	ptInterp    = 3
	ptPhdr      = 6
	ptGNUStack  = 0x6474e551
	pfX         = 1
	pfW         = 2
	pfR         = 4
	ehdrSize    = 64
	phdrSize    = 56
	maxPhdrs    = 1 << 12
	maxInterpSz = 4096
)

// progHeader is one ELF64 program header.
type progHeader struct {
	typ, flags                       uint32
	off, vaddr, filesz, memsz, align uint64
}

// elfInfo is what the loader needs from an ELF file.
type elfInfo struct {
	typ    uint16
	entry  uint64
	phoff  uint64
	phdrs  []progHeader
	interp string
}

// File is a file the loader reads an executable from.
type File interface {
	ReadAt(p []byte, off int64) (int, error)
}

// readFull reads exactly len(p) bytes at off, or fails with ENOEXEC.
func readFull(f File, p []byte, off int64) error {
	n, err := f.ReadAt(p, off)
	if n == len(p) {
		return nil
	}
	if err == nil || err == io.EOF {
		return unix.ENOEXEC
	}
	return err
}

// parseELF reads and checks an ELF64 x86-64 executable's headers.
func parseELF(f File) (*elfInfo, error) {
	var eh [ehdrSize]byte
	if err := readFull(f, eh[:], 0); err != nil {
		return nil, err
	}
	le := binary.LittleEndian
	if string(eh[:4]) != "\x7fELF" || eh[4] != 2 /* 64-bit */ || eh[5] != 1 /* little-endian */ || eh[6] != 1 {
		return nil, unix.ENOEXEC
	}
	info := &elfInfo{typ: le.Uint16(eh[16:]), entry: le.Uint64(eh[24:]), phoff: le.Uint64(eh[32:])}
	if le.Uint16(eh[18:]) != emX8664 || (info.typ != etExec && info.typ != etDyn) {
		return nil, unix.ENOEXEC
	}
	phentsize, phnum := le.Uint16(eh[54:]), int(le.Uint16(eh[56:]))
	if phentsize != phdrSize || phnum == 0 || phnum > maxPhdrs || info.phoff > 1<<32 {
		return nil, unix.ENOEXEC
	}
	raw := make([]byte, phnum*phdrSize)
	if err := readFull(f, raw, int64(info.phoff)); err != nil {
		return nil, err
	}
	for i := 0; i < phnum; i++ {
		b := raw[i*phdrSize:]
		ph := progHeader{
			typ: le.Uint32(b[0:]), flags: le.Uint32(b[4:]), off: le.Uint64(b[8:]), vaddr: le.Uint64(b[16:]),
			filesz: le.Uint64(b[32:]), memsz: le.Uint64(b[40:]), align: le.Uint64(b[48:]),
		}
		switch ph.typ {
		case ptLoad:
			if ph.filesz > ph.memsz || ph.off%pageSize != ph.vaddr%pageSize ||
				ph.vaddr+ph.memsz < ph.vaddr || ph.off+ph.filesz < ph.off {
				return nil, unix.ENOEXEC
			}
		case ptInterp:
			if info.interp != "" || ph.filesz < 2 || ph.filesz > maxInterpSz {
				return nil, unix.ENOEXEC
			}
			s := make([]byte, ph.filesz)
			if err := readFull(f, s, int64(ph.off)); err != nil {
				return nil, err
			}
			if s[len(s)-1] != 0 {
				return nil, unix.ENOEXEC
			}
			info.interp = string(s[:len(s)-1])
		}
		info.phdrs = append(info.phdrs, ph)
	}
	return info, nil
}
