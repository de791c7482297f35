package loader

import (
	"bytes"
	"errors"
	"runtime"
	"testing"

	"golang.org/x/sys/unix"
)

// The errnos in these tables are the host's: each file was built the same
// way and run with execve(2) on Linux (6.18; binfmt_elf's checks are the
// same in 6.1). Where Linux finds the fault only after the point of no
// return and kills the process with SIGSEGV, moat, which has replaced
// nothing yet, fails the exec instead; those rows say so.

// interpreters serves PT_INTERP names to Load as the kernel would.
type interpreters map[string][]byte

func (m interpreters) open(name string) (File, error) {
	b, ok := m[name]
	if !ok {
		return nil, unix.ENOENT
	}
	return bytes.NewReader(b), nil
}

const interpPath = "/lib/ld-test.so"

func mutate(e *testELF, f func(*testELF)) *testELF { f(e); return e }

// withPhnum pads e's program header table with PT_NULL entries to n
// entries, moving it to the end of a file grown to hold it.
func withPhnum(e *testELF, n int) *testELF {
	e.phdrs = append(e.phdrs, make([]progHeader, n-len(e.phdrs))...)
	e.phoff = uint64(e.size)
	e.size += n * phdrSize
	return e
}

func TestLoadRefusesMalformedExecutablesWithLinuxErrno(t *testing.T) {
	goodInterp := dynELF().bytes()
	for _, c := range []struct {
		name   string
		file   []byte
		interp []byte // served as interpPath, if set
		want   unix.Errno
	}{
		{"an empty file", nil, nil, unix.ENOEXEC},
		{"e_ident alone", execELF().bytes()[:16], nil, unix.ENOEXEC},
		{"a header cut at 63 bytes", execELF().bytes()[:63], nil, unix.ENOEXEC},
		{"bad magic byte 0", mutate(execELF(), func(e *testELF) { e.ident[0] = 0x7e }).bytes(), nil, unix.ENOEXEC},
		{"bad magic byte 3", mutate(execELF(), func(e *testELF) { e.ident[3] = 'f' }).bytes(), nil, unix.ENOEXEC},
		{"machine EM_386", mutate(execELF(), func(e *testELF) { e.machine = unix.EM_386 }).bytes(), nil, unix.ENOEXEC},
		{"machine EM_AARCH64", mutate(execELF(), func(e *testELF) { e.machine = unix.EM_AARCH64 }).bytes(), nil, unix.ENOEXEC},
		{"type ET_NONE", mutate(execELF(), func(e *testELF) { e.typ = unix.ET_NONE }).bytes(), nil, unix.ENOEXEC},
		{"type ET_REL", mutate(execELF(), func(e *testELF) { e.typ = unix.ET_REL }).bytes(), nil, unix.ENOEXEC},
		{"type ET_CORE", mutate(execELF(), func(e *testELF) { e.typ = unix.ET_CORE }).bytes(), nil, unix.ENOEXEC},
		{"e_phentsize 0", mutate(execELF(), func(e *testELF) { e.phentsize = 0 }).bytes(), nil, unix.ENOEXEC},
		{"e_phentsize 32 (ELF32's)", mutate(execELF(), func(e *testELF) { e.phentsize = 32 }).bytes(), nil, unix.ENOEXEC},
		{"e_phentsize 64", mutate(execELF(), func(e *testELF) { e.phentsize = 64 }).bytes(), nil, unix.ENOEXEC},
		{"e_phnum 0", mutate(execELF(), func(e *testELF) { e.phnum = 0 }).bytes(), nil, unix.ENOEXEC},
		// The table may fill one page at most: 73 entries.
		{"e_phnum 74", withPhnum(execELF(), 74).bytes(), nil, unix.ENOEXEC},
		{"e_phnum 0xffff", mutate(execELF(), func(e *testELF) { e.phnum = 0xffff }).bytes(), nil, unix.ENOEXEC},
		{"e_phoff past the end", mutate(execELF(), func(e *testELF) { e.phoff = 0x10000 }).bytes(), nil, unix.ENOEXEC},
		{"e_phoff 1<<63", mutate(execELF(), func(e *testELF) { e.phoff = 1 << 63 }).bytes(), nil, unix.ENOEXEC},
		{"e_phoff+table overflows", mutate(execELF(), func(e *testELF) { e.phoff = ^uint64(0) - 8 }).bytes(), nil, unix.ENOEXEC},
		{"a table cut by the end of the file", mutate(execELF(), func(e *testELF) { e.phoff = uint64(e.size) - phdrSize }).bytes(), nil, unix.ENOEXEC},

		{"PT_INTERP of 0 bytes", mutate(execELF().withInterp(interpPath), func(e *testELF) { e.phdrs[3].filesz = 0 }).bytes(), goodInterp, unix.ENOEXEC},
		{"PT_INTERP of 1 byte", mutate(execELF().withInterp(interpPath), func(e *testELF) { e.phdrs[3].filesz = 1 }).bytes(), goodInterp, unix.ENOEXEC},
		{"PT_INTERP longer than PATH_MAX", mutate(execELF().withInterp(interpPath), func(e *testELF) {
			e.phdrs[3].filesz = unix.PathMax + 1
			e.at[interpOff+unix.PathMax] = []byte{0}
			e.size = 0x3000
		}).bytes(), goodInterp, unix.ENOEXEC},
		{"PT_INTERP without its NUL", mutate(execELF().withInterp(interpPath), func(e *testELF) { e.phdrs[3].filesz-- }).bytes(), goodInterp, unix.ENOEXEC},
		{"PT_INTERP past the end of the file", mutate(execELF().withInterp(interpPath), func(e *testELF) { e.phdrs[3].off = 0x100000 }).bytes(), goodInterp, unix.EIO},
		{"PT_INTERP cut by the end of the file", mutate(execELF().withInterp(interpPath), func(e *testELF) { e.phdrs[3].off = uint64(e.size) - 4 }).bytes(), goodInterp, unix.EIO},
		{"PT_INTERP at offset 1<<63", mutate(execELF().withInterp(interpPath), func(e *testELF) { e.phdrs[3].off = 1 << 63 }).bytes(), goodInterp, unix.EINVAL},
		{"PT_INTERP ending past offset 1<<63", mutate(execELF().withInterp(interpPath), func(e *testELF) { e.phdrs[3].off = 1<<63 - 4 }).bytes(), goodInterp, unix.EINVAL},
		// Only the first PT_INTERP is read.
		{"a malformed PT_INTERP before a good one", mutate(execELF().withInterp(interpPath), func(e *testELF) {
			bad := e.phdrs[3]
			bad.filesz = 1
			e.phdrs = append(e.phdrs[:3], bad, e.phdrs[3])
		}).bytes(), goodInterp, unix.ENOEXEC},
		{"an interpreter that is not there", execELF().withInterp("/lib/none").bytes(), goodInterp, unix.ENOENT},

		{"an interpreter with bad magic", execELF().withInterp(interpPath).bytes(), mutate(dynELF(), func(e *testELF) { e.ident[1] = 'e' }).bytes(), unix.ELIBBAD},
		{"an interpreter for EM_386", execELF().withInterp(interpPath).bytes(), mutate(dynELF(), func(e *testELF) { e.machine = unix.EM_386 }).bytes(), unix.ELIBBAD},
		{"an interpreter with e_phentsize 32", execELF().withInterp(interpPath).bytes(), mutate(dynELF(), func(e *testELF) { e.phentsize = 32 }).bytes(), unix.ELIBBAD},
		{"an interpreter with e_phnum 0", execELF().withInterp(interpPath).bytes(), mutate(dynELF(), func(e *testELF) { e.phnum = 0 }).bytes(), unix.ELIBBAD},
		{"an interpreter with e_phnum 74", execELF().withInterp(interpPath).bytes(), withPhnum(dynELF(), 74).bytes(), unix.ELIBBAD},
		{"an interpreter whose table is past its end", execELF().withInterp(interpPath).bytes(), mutate(dynELF(), func(e *testELF) { e.phoff = 0x100000 }).bytes(), unix.ELIBBAD},
		// Linux reads the interpreter's header with a read that must be
		// whole: a shorter file is an I/O error, not a bad library.
		{"an interpreter of 63 bytes", execELF().withInterp(interpPath).bytes(), dynELF().bytes()[:63], unix.EIO},
		{"an empty interpreter", execELF().withInterp(interpPath).bytes(), []byte{}, unix.EIO},
		{"an interpreter that is a script", execELF().withInterp(interpPath).bytes(), []byte("#!/bin/sh\nexit 0\n"), unix.EIO},

		// Linux kills the process for these (SIGSEGV after the point of
		// no return).
		{"p_filesz > p_memsz", mutate(execELF(), func(e *testELF) { e.phdrs[1].memsz = e.phdrs[1].filesz - 1 }).bytes(), nil, unix.ENOEXEC},
		{"p_offset and p_vaddr apart in the page", mutate(execELF(), func(e *testELF) { e.phdrs[1].off += 0x10 }).bytes(), nil, unix.ENOEXEC},
		{"p_vaddr+p_memsz overflows", mutate(execELF(), func(e *testELF) { e.phdrs[1].memsz = ^uint64(0) - 0x1000 }).bytes(), nil, unix.ENOEXEC},
		{"p_offset+p_filesz overflows", mutate(execELF(), func(e *testELF) {
			e.phdrs[1].off, e.phdrs[1].filesz = ^uint64(0)&^0xfff, 0x2000
			e.phdrs[1].memsz = 0x2000
		}).bytes(), nil, unix.ENOEXEC},
		{"p_offset past the largest file offset", mutate(execELF(), func(e *testELF) { e.phdrs[1].off = 1<<63 | execData&0xfff }).bytes(), nil, unix.ENOEXEC},
		{"a segment above the address space", mutate(execELF(), func(e *testELF) { e.phdrs[1].vaddr = 0x7ffffffff000 }).bytes(), nil, unix.ENOMEM},
		{"a segment at 0", mutate(execELF(), func(e *testELF) { e.phdrs[1].vaddr = 0 }).bytes(), nil, unix.ENOMEM},
		{"no PT_LOAD", mutate(execELF(), func(e *testELF) { e.phdrs[0].typ, e.phdrs[1].typ = unix.PT_NULL, unix.PT_NOTE }).bytes(), nil, unix.ENOEXEC},
		{"an ET_REL interpreter", execELF().withInterp(interpPath).bytes(), mutate(dynELF(), func(e *testELF) { e.typ = unix.ET_REL }).bytes(), unix.ELIBBAD},
		{"an interpreter with p_filesz > p_memsz", execELF().withInterp(interpPath).bytes(), mutate(dynELF(), func(e *testELF) { e.phdrs[1].memsz = 1 }).bytes(), unix.ELIBBAD},
		{"an interpreter with a misaligned segment", execELF().withInterp(interpPath).bytes(), mutate(dynELF(), func(e *testELF) { e.phdrs[0].off = 0x10 }).bytes(), unix.ELIBBAD},
		{"an interpreter without PT_LOAD", execELF().withInterp(interpPath).bytes(), mutate(dynELF(), func(e *testELF) { e.phdrs[0].typ, e.phdrs[1].typ = unix.PT_NULL, unix.PT_NULL }).bytes(), unix.ELIBBAD},
	} {
		t.Run(c.name, func(t *testing.T) {
			m, as := newMM(t)
			interps := interpreters{}
			if c.interp != nil {
				interps[interpPath] = c.interp
			}
			_, err := Load(m, bytes.NewReader(c.file), "/bin/test", interps.open)
			if err != c.want {
				t.Fatalf("Load = %v, want %v", err, c.want)
			}
			// Every check comes before the first mapping, as Linux's
			// come before the point of no return where it can.
			if len(m.Maps()) != 0 || as.Mapped() != 0 {
				t.Errorf("a refused file left mappings: %+v", m.Maps())
			}
		})
	}
}

func TestLoadAcceptsWhatLinuxRuns(t *testing.T) {
	for _, c := range []struct {
		name   string
		file   []byte
		interp []byte
	}{
		// binfmt_elf checks the magic, not EI_CLASS, EI_DATA or the
		// versions: an e_phentsize of 56 is what makes the file ELF64.
		{"EI_CLASS ELFCLASS32", mutate(execELF(), func(e *testELF) { e.ident[unix.EI_CLASS] = unix.ELFCLASS32 }).bytes(), nil},
		{"EI_CLASS 0", mutate(execELF(), func(e *testELF) { e.ident[unix.EI_CLASS] = 0 }).bytes(), nil},
		{"EI_DATA ELFDATA2MSB", mutate(execELF(), func(e *testELF) { e.ident[unix.EI_DATA] = unix.ELFDATA2MSB }).bytes(), nil},
		{"EI_VERSION 0", mutate(execELF(), func(e *testELF) { e.ident[unix.EI_VERSION] = 0 }).bytes(), nil},
		{"e_version 0", mutate(execELF(), func(e *testELF) { e.version = 0 }).bytes(), nil},
		{"e_phnum 73, a page of headers", withPhnum(execELF(), 73).bytes(), nil},
		{"a position-independent executable", dynELF().bytes(), nil},
		{"overlapping PT_LOADs", mutate(execELF(), func(e *testELF) {
			e.phdrs = append(e.phdrs, progHeader{typ: unix.PT_LOAD, flags: unix.PF_R, vaddr: execBase, filesz: 0x1000, memsz: 0x1000})
		}).bytes(), nil},
		{"a segment past the end of the file", mutate(execELF(), func(e *testELF) {
			e.phdrs = append(e.phdrs, progHeader{typ: unix.PT_LOAD, flags: unix.PF_R, off: 0x100000, vaddr: 0x900000, filesz: 0x2000, memsz: 0x2000})
		}).bytes(), nil},
		{"p_filesz past the end of the file", mutate(execELF(), func(e *testELF) { e.phdrs[1].filesz = 0x2000 }).bytes(), nil},
		{"an empty PT_LOAD", mutate(execELF(), func(e *testELF) {
			e.phdrs = append(e.phdrs, progHeader{typ: unix.PT_LOAD, flags: unix.PF_R, vaddr: 0x900000})
		}).bytes(), nil},
		{"PT_NOTE, PT_TLS and PT_LOPROC headers", mutate(execELF(), func(e *testELF) {
			e.phdrs = append(e.phdrs, progHeader{typ: unix.PT_NOTE, off: 1 << 62}, progHeader{typ: unix.PT_TLS, memsz: 1 << 40},
				progHeader{typ: unix.PT_LOPROC, filesz: 1})
		}).bytes(), nil},
		{"a PT_INTERP of PATH_MAX bytes", mutate(execELF().withInterp(interpPath), func(e *testELF) {
			e.phdrs[3].filesz = unix.PathMax
			e.size = 0x3000
			e.at[interpOff+len(interpPath)] = bytes.Repeat([]byte{0}, unix.PathMax-len(interpPath))
		}).bytes(), dynELF().bytes()},
		{"a malformed PT_INTERP after a good one", mutate(execELF().withInterp(interpPath), func(e *testELF) {
			e.phdrs = append(e.phdrs, progHeader{typ: unix.PT_INTERP, off: 1 << 62, filesz: 1})
		}).bytes(), dynELF().bytes()},
		{"an ELFCLASS32 interpreter", execELF().withInterp(interpPath).bytes(), mutate(dynELF(), func(e *testELF) { e.ident[unix.EI_CLASS] = unix.ELFCLASS32 }).bytes()},
		// Linux does not look for an interpreter's interpreter.
		{"an interpreter with a malformed PT_INTERP", execELF().withInterp(interpPath).bytes(), mutate(dynELF(), func(e *testELF) {
			e.phdrs = append(e.phdrs, progHeader{typ: unix.PT_INTERP, off: 0x100000, filesz: 1})
		}).bytes()},
	} {
		t.Run(c.name, func(t *testing.T) {
			m, _ := newMM(t)
			interps := interpreters{}
			if c.interp != nil {
				interps[interpPath] = c.interp
			}
			if _, err := Load(m, bytes.NewReader(c.file), "/bin/test", interps.open); err != nil {
				t.Fatalf("Load = %v, want success", err)
			}
		})
	}
}

func TestParseELFReadsTheInterpreterNameUpToItsFirstNUL(t *testing.T) {
	for _, c := range []struct {
		name, pt, want string
	}{
		{"a plain name", interpPath, interpPath},
		{"bytes after a NUL", interpPath + "\x00garbage", interpPath},
		// Linux then opens "" as a name relative to the working
		// directory: a directory, EACCES.
		{"an empty name", "\x00", ""},
	} {
		info, err := parseELF(execELF().withInterp(c.pt).file())
		if err != nil {
			t.Errorf("%s: parseELF = %v", c.name, err)
			continue
		}
		if info.interp != c.want {
			t.Errorf("%s: interpreter %q, want %q", c.name, info.interp, c.want)
		}
	}
}

func TestParseELFWithoutPTInterpNamesNoInterpreter(t *testing.T) {
	info, err := parseELF(execELF().file())
	if err != nil {
		t.Fatal(err)
	}
	if info.interp != "" {
		t.Errorf("interpreter %q for a static executable", info.interp)
	}
	if info.typ != unix.ET_EXEC || info.entry != execBase+0x1000 || info.phoff != ehdrSize || len(info.phdrs) != 3 {
		t.Errorf("parsed %+v", info)
	}
}

func TestLoadPassesTheInterpretersOpenErrorThrough(t *testing.T) {
	m, _ := newMM(t)
	open := func(string) (File, error) { return nil, unix.EACCES }
	if _, err := Load(m, execELF().withInterp(interpPath).file(), "/bin/test", open); err != unix.EACCES {
		t.Errorf("Load = %v, want the opener's EACCES", err)
	}
	// Without an opener no interpreter can be had.
	if _, err := Load(m, execELF().withInterp(interpPath).file(), "/bin/test", nil); err != unix.ENOEXEC {
		t.Errorf("Load without opener = %v, want ENOEXEC", err)
	}
}

// failingFile fails every read at or past from with err.
type failingFile struct {
	b    []byte
	from int64
	err  error
}

func (f failingFile) ReadAt(p []byte, off int64) (int, error) {
	if off+int64(len(p)) > f.from {
		return 0, f.err
	}
	return copy(p, f.b[off:]), nil
}

func TestParseELFReportsTheFilesReadErrorsAsLinuxDoes(t *testing.T) {
	b := execELF().withInterp(interpPath).bytes()
	ioErr := errors.New("the file server went away")
	// The header: the file's error. The program headers: any failure is
	// ENOEXEC (load_elf_phdrs returns no table). The interpreter's name:
	// the file's error.
	for _, c := range []struct {
		name string
		from int64
		want error
	}{
		{"header", 0, ioErr},
		{"program headers", ehdrSize, unix.ENOEXEC},
		{"interpreter name", interpOff, ioErr},
	} {
		_, err := parseELF(failingFile{b, c.from, ioErr})
		if !errors.Is(err, c.want) {
			t.Errorf("a read error in the %s: %v, want %v", c.name, err, c.want)
		}
	}
}

func TestParseELFAllocatesBoundedMemoryForHugeHeaderCounts(t *testing.T) {
	// Headers that claim the most they can: 0xffff program headers, a
	// PT_INTERP of 1<<40 bytes, a PT_LOAD of 1<<46. What parseELF
	// allocates must not follow them.
	files := [][]byte{
		mutate(execELF(), func(e *testELF) { e.phnum = 0xffff }).bytes(),
		mutate(execELF().withInterp(interpPath), func(e *testELF) { e.phdrs[3].filesz = 1 << 40 }).bytes(),
		mutate(execELF(), func(e *testELF) { e.phdrs[1].memsz = 1 << 46 }).bytes(),
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for i := 0; i < 100; i++ {
		for _, b := range files {
			parseELF(bytes.NewReader(b))
		}
	}
	runtime.ReadMemStats(&after)
	if per := (after.TotalAlloc - before.TotalAlloc) / 300; per > 16<<10 {
		t.Errorf("parseELF allocated %d bytes per file", per)
	}
}
