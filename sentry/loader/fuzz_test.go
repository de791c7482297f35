package loader

import (
	"bytes"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/sentry/mm"
)

// recordingFile remembers the largest read made of it: every buffer the
// loader allocates for a header is one it reads into.
type recordingFile struct {
	r       *bytes.Reader
	largest int
}

func (f *recordingFile) ReadAt(p []byte, off int64) (int, error) {
	f.largest = max(f.largest, len(p))
	return f.r.ReadAt(p, off)
}

// seedFiles are well-formed files and one of each kind of fault, cut to
// what parseELF reads: the fuzzer mutates (and minimizes) small inputs
// faster.
func seedFiles() [][]byte {
	seeds := []*testELF{
		execELF(),
		dynELF(),
		execELF().withInterp(interpPath),
		execELF().withInterp(interpPath + "\x00tail"),
		withPhnum(execELF(), 73),
		withPhnum(execELF(), 74),
		mutate(execELF(), func(e *testELF) { e.ident[unix.EI_CLASS] = unix.ELFCLASS32 }),
		mutate(execELF(), func(e *testELF) { e.phentsize = 32 }),
		mutate(execELF(), func(e *testELF) { e.phdrs[1].memsz = 0 }),
		mutate(execELF(), func(e *testELF) { e.phdrs[1].off = 1 << 63 }),
		mutate(execELF().withInterp(interpPath), func(e *testELF) { e.phdrs[3].off = 1<<63 - 2 }),
		mutate(execELF().withInterp(interpPath), func(e *testELF) { e.phdrs[3].filesz = 1 << 40 }),
	}
	var out [][]byte
	for _, e := range seeds {
		out = append(out, headersOnly(e).bytes())
	}
	return append(out, execELF().bytes()[:63], []byte("#!/bin/sh\n"))
}

// headersOnly moves e's program headers right after its header and its
// interpreter's name after them, and ends the file there.
func headersOnly(e *testELF) *testELF {
	e.phoff = ehdrSize
	end := ehdrSize + len(e.phdrs)*phdrSize
	for i, ph := range e.phdrs {
		if s, ok := e.at[int(ph.off)]; ok && ph.typ == unix.PT_INTERP {
			delete(e.at, int(ph.off))
			e.at[end] = s
			e.phdrs[i].off = uint64(end)
			end += len(s)
		}
	}
	e.size = end
	return e
}

// isErrno reports whether err is one of the errnos a malformed file may
// give.
func isErrno(err error, allowed ...unix.Errno) bool {
	e, ok := err.(unix.Errno)
	if !ok {
		return false
	}
	for _, a := range allowed {
		if e == a {
			return true
		}
	}
	return false
}

// FuzzParseELF checks parseELF and checkLoads on any bytes: they never
// panic, read (and so allocate) at most a page at a time, fail only with
// ENOEXEC, EIO or EINVAL, and what they accept keeps the rules checked.
func FuzzParseELF(f *testing.F) {
	for _, b := range seedFiles() {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		file := &recordingFile{r: bytes.NewReader(b)}
		info, err := parseELF(file)
		if err == nil {
			err = checkLoads(info)
		}
		if file.largest > pageSize {
			t.Errorf("a read of %d bytes", file.largest)
		}
		if err != nil {
			if !isErrno(err, unix.ENOEXEC, unix.EIO, unix.EINVAL) {
				t.Fatalf("error %v (%T)", err, err)
			}
			return
		}
		if info.typ != etExec && info.typ != etDyn || len(info.phdrs) == 0 || len(info.phdrs)*phdrSize > pageSize {
			t.Errorf("accepted type %d with %d headers", info.typ, len(info.phdrs))
		}
		if bytes.IndexByte([]byte(info.interp), 0) >= 0 || len(info.interp) >= unix.PathMax || info.interp != "" && !info.hasInterp {
			t.Errorf("interpreter %q (%v)", info.interp, info.hasInterp)
		}
		for _, ph := range info.phdrs {
			if ph.typ == ptLoad && (ph.filesz > ph.memsz || ph.vaddr+ph.memsz < ph.vaddr || ph.off+ph.filesz < ph.off ||
				(ph.off-ph.vaddr)%pageSize != 0) {
				t.Errorf("accepted segment %+v", ph)
			}
		}
	})
}

// FuzzLoad loads any program with any interpreter into a fresh address
// space: it never panics, fails only with the errnos a bad file gives,
// and maps nothing outside the user range.
func FuzzLoad(f *testing.F) {
	interp := dynELF().bytes()
	for _, b := range seedFiles() {
		f.Add(b, interp)
	}
	f.Add(execELF().withInterp(interpPath).bytes(), execELF().bytes())
	f.Fuzz(func(t *testing.T, prog, interp []byte) {
		m, _ := newMM(t)
		open := func(string) (File, error) { return bytes.NewReader(interp), nil }
		img, err := Load(m, bytes.NewReader(prog), "/bin/fuzz", open)
		if err != nil {
			if !isErrno(err, unix.ENOEXEC, unix.EIO, unix.EINVAL, unix.ELIBBAD, unix.ENOMEM) {
				t.Fatalf("error %v (%T)", err, err)
			}
			return
		}
		for _, mi := range m.Maps() {
			if mi.Start < mm.MinAddr || mi.End > m.MaxAddr() || mi.Start >= mi.End {
				t.Errorf("mapping %+v outside the user range", mi)
			}
		}
		if img.BrkStart%pageSize != 0 {
			t.Errorf("brk %#x not page aligned", img.BrkStart)
		}
	})
}
