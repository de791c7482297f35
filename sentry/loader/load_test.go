package loader

import (
	"bytes"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/platform"
	"github.com/moat-sandbox/moat/sentry/mm"
)

const (
	rx = platform.ProtRead | platform.ProtExec
	rw = platform.ProtRead | platform.ProtWrite
)

func load(t *testing.T, m *mm.MemoryManager, e *testELF, interps interpreters) Image {
	t.Helper()
	img, err := Load(m, e.file(), "/bin/test", interps.open)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	return img
}

// wantMaps checks m's mappings against want, in address order (what
// maps shows: the most mprotect may grant is not the loader's concern).
func wantMaps(t *testing.T, m *mm.MemoryManager, want []mm.MapInfo) {
	t.Helper()
	got := m.Maps()
	if len(got) != len(want) {
		t.Fatalf("mappings:\n%+v\nwant\n%+v", got, want)
	}
	for i := range want {
		got[i].MaxProt = 0
		if got[i] != want[i] {
			t.Errorf("mapping %d: %+v, want %+v", i, got[i], want[i])
		}
	}
}

func TestLoadMapsEachSegmentWithItsProtectionAndABss(t *testing.T) {
	m, as := newMM(t)
	e := execELF()
	file := e.bytes()
	img := load(t, m, e, nil)

	// As Linux's /proc/self/maps shows the same file: text, data from
	// the file, then the rest of the bss as anonymous memory.
	wantMaps(t, m, []mm.MapInfo{
		{Start: execBase, End: execBase + 0x2000, Prot: rx, Name: "/bin/test"},
		{Start: execData, End: execData + 0x1000, Prot: rw, Offset: 0x2000, Name: "/bin/test"},
		{Start: execData + 0x1000, End: execData + 0x3000, Prot: rw},
	})
	// The host maps the pages as the guest will use them.
	for _, c := range []struct {
		addr uintptr
		prot platform.Prot
	}{{execBase, rx}, {execData, rw}, {execData + 0x2fff, rw}} {
		if _, prot, ok := as.Mapping(c.addr); !ok || prot != c.prot {
			t.Errorf("host mapping at %#x: %v (mapped %v), want %v", c.addr, prot, ok, c.prot)
		}
	}
	if !bytes.Equal(read(t, m, execBase, 0x2000), file[:0x2000]) {
		t.Error("the text segment does not hold the file's first two pages")
	}
	data := read(t, m, execData, 0x3000)
	if !bytes.Equal(data[:0x100], file[0x2000:0x2100]) {
		t.Error("the data segment does not start with its p_filesz bytes of the file")
	}
	if !bytes.Equal(data[0x100:], make([]byte, 0x2f00)) {
		t.Error("the bss, in the data's last page and past it, is not zero")
	}
	want := Image{Entry: execBase + 0x1000, ExecEntry: execBase + 0x1000, Phdr: execBase + ehdrSize, Phnum: 3,
		BrkStart: execData + 0x3000}
	if img != want {
		t.Errorf("image %+v, want %+v", img, want)
	}
}

func TestLoadKeepsTheFilesBytesPastPFileszWhenASegmentHasNoBss(t *testing.T) {
	// Linux maps the segment's last page from the file whole, and only
	// a bss is cleared: without one, the bytes past p_filesz show.
	m, _ := newMM(t)
	e := execELF()
	e.size = 0x3000
	e.phdrs[1].memsz = e.phdrs[1].filesz
	load(t, m, e, nil)
	if got, want := read(t, m, execData, 0x1000), e.bytes()[0x2000:0x3000]; !bytes.Equal(got, want) {
		t.Error("the data segment's page is not the file's page")
	}
}

func TestLoadClearsTheTailOfEverySegmentWithABss(t *testing.T) {
	// Two segments with a bss of 16 bytes, one that starts within its
	// page: on Linux (6.18) each page is clear from p_filesz to its end.
	m, _ := newMM(t)
	e := execELF()
	e.size = 0x4000
	e.phdrs = append(e.phdrs,
		progHeader{typ: unix.PT_LOAD, flags: unix.PF_R | unix.PF_W, off: 0x3000, vaddr: 0x800000, filesz: 0x100, memsz: 0x110},
		progHeader{typ: unix.PT_LOAD, flags: unix.PF_R | unix.PF_W, off: 0x3080, vaddr: 0xa00080, filesz: 0x100, memsz: 0x110})
	file := e.bytes()
	load(t, m, e, nil)
	for _, c := range []struct {
		page   uintptr
		off    int // file offset of the page
		filled int // bytes of the file in it
	}{{execData, 0x2000, 0x100}, {0x800000, 0x3000, 0x100}, {0xa00000, 0x3000, 0x180}} {
		got := read(t, m, c.page, 0x1000)
		if !bytes.Equal(got[:c.filled], file[c.off:c.off+c.filled]) || !bytes.Equal(got[c.filled:], make([]byte, 0x1000-c.filled)) {
			t.Errorf("page %#x: want %#x bytes of the file, then zeros", c.page, c.filled)
		}
	}
}

func TestLoadPlacesAPositionIndependentExecutableAsOneBlock(t *testing.T) {
	m, _ := newMM(t)
	img := load(t, m, dynELF(), nil)
	bias := img.ExecBase
	if bias == 0 || bias%pageSize != 0 || bias < mm.MinAddr {
		t.Fatalf("load bias %#x", bias)
	}
	// The segments keep their distances; the gap between them is not
	// mapped (Linux unmaps what its reservation of the span left over).
	const data = execData - execBase
	wantMaps(t, m, []mm.MapInfo{
		{Start: bias, End: bias + 0x2000, Prot: rx, Name: "/bin/test"},
		{Start: bias + data, End: bias + data + 0x1000, Prot: rw, Offset: 0x2000, Name: "/bin/test"},
		{Start: bias + data + 0x1000, End: bias + data + 0x3000, Prot: rw},
	})
	want := Image{Entry: bias + 0x1000, ExecEntry: bias + 0x1000, ExecBase: bias, Phdr: bias + ehdrSize, Phnum: 3,
		BrkStart: bias + data + 0x3000}
	if img != want {
		t.Errorf("image %+v, want %+v", img, want)
	}
}

func TestLoadStartsAProgramWithAnInterpreterAtTheInterpreter(t *testing.T) {
	m, _ := newMM(t)
	img := load(t, m, execELF().withInterp(interpPath), interpreters{interpPath: dynELF().bytes()})
	if img.Base == 0 || img.Base%pageSize != 0 {
		t.Fatalf("interpreter base %#x", img.Base)
	}
	if img.Entry != img.Base+0x1000 || img.ExecEntry != execBase+0x1000 || img.ExecBase != 0 {
		t.Errorf("image %+v: want the interpreter's entry, the program's AT_ENTRY", img)
	}
	// The interpreter is mapped under its name, the program's brk stays
	// the program's.
	var named int
	for _, mi := range m.Maps() {
		if mi.Name == interpPath {
			named++
			if mi.Start < img.Base {
				t.Errorf("interpreter mapping %+v below its base %#x", mi, img.Base)
			}
		}
	}
	if named != 2 || img.BrkStart != execData+0x3000 {
		t.Errorf("%d interpreter mappings, brk %#x; maps %+v", named, img.BrkStart, m.Maps())
	}
}

func TestLoadRunsAnETEXECInterpreterAtItsOwnAddresses(t *testing.T) {
	// Linux loads an ET_EXEC interpreter where it is linked, with an
	// AT_BASE of 0.
	interp := execELF()
	for i := range interp.phdrs {
		interp.phdrs[i].vaddr += 0x10000000
	}
	interp.entry += 0x10000000
	m, _ := newMM(t)
	img := load(t, m, execELF().withInterp(interpPath), interpreters{interpPath: interp.bytes()})
	if img.Base != 0 || img.Entry != uintptr(interp.entry) || img.ExecEntry != execBase+0x1000 {
		t.Errorf("image %+v", img)
	}
}

func TestLoadFindsTheProgramHeadersInTheLastSegmentThatHoldsThem(t *testing.T) {
	// AT_PHDR, as Linux computes it (host-checked): from the PT_LOAD
	// segments that hold e_phoff in the file, the last one winning;
	// PT_PHDR is not read; with no such segment, the load bias.
	for _, c := range []struct {
		name string
		e    *testELF
		want func(bias uintptr) uintptr
	}{
		{"a PT_PHDR that says otherwise", mutate(execELF(), func(e *testELF) {
			e.phdrs = append([]progHeader{{typ: unix.PT_PHDR, flags: unix.PF_R, off: ehdrSize, vaddr: execBase + 0x500}}, e.phdrs...)
		}), func(uintptr) uintptr { return execBase + ehdrSize }},
		{"two segments holding them", mutate(execELF(), func(e *testELF) {
			e.phdrs = append(e.phdrs, progHeader{typ: unix.PT_LOAD, flags: unix.PF_R, vaddr: 0x900000, filesz: 0x1000, memsz: 0x1000})
		}), func(uintptr) uintptr { return 0x900000 + ehdrSize }},
		{"no segment holding them", mutate(dynELF(), func(e *testELF) {
			e.phdrs[0].off, e.phdrs[0].vaddr, e.phdrs[0].filesz, e.phdrs[0].memsz = 0x1000, 0x1000, 0x1000, 0x1000
		}), func(bias uintptr) uintptr { return bias }},
	} {
		m, _ := newMM(t)
		img := load(t, m, c.e, nil)
		if want := c.want(img.ExecBase); img.Phdr != want {
			t.Errorf("%s: AT_PHDR %#x, want %#x", c.name, img.Phdr, want)
		}
	}
}

func TestLoadMapsASegmentPastTheEndOfTheFile(t *testing.T) {
	// Linux maps it; touching it raises SIGBUS, which mm arranges: the
	// loader only has to map it.
	m, _ := newMM(t)
	e := execELF()
	e.phdrs = append(e.phdrs, progHeader{typ: unix.PT_LOAD, flags: unix.PF_R, off: 0x100000, vaddr: 0x900000, filesz: 0x2000, memsz: 0x2000})
	load(t, m, e, nil)
	if !m.IsMappedRange(0x900000, 0x2000) {
		t.Errorf("segment past the end of the file not mapped: %+v", m.Maps())
	}
	if _, err := m.CopyIn(0x900000, make([]byte, 1)); err != unix.EFAULT {
		t.Errorf("reading a page past the end of the file: %v, want EFAULT (SIGBUS for the guest)", err)
	}
}

func TestLoadAlignsAPositionIndependentExecutableToItsSegmentsAlignment(t *testing.T) {
	for _, align := range []uint64{0x200000, 0x1000000} {
		m, _ := newMM(t)
		// Something mapped first, so that the free range found does not
		// start aligned by chance.
		if _, err := m.MMap(mm.MMapOpts{Length: 0x3000, Prot: rw}); err != nil {
			t.Fatal(err)
		}
		e := dynELF()
		e.phdrs[0].align, e.phdrs[1].align = align, align
		// 0x1800 is no power of two: Linux's maximum_alignment passes over it.
		e.phdrs[2].align = 0x1800
		img := load(t, m, e, nil)
		if img.ExecBase == 0 || uint64(img.ExecBase)%align != 0 {
			t.Errorf("p_align %#x: load bias %#x, want a multiple of it (exec/load_address of the kernel selftests)", align, img.ExecBase)
		}
	}
}
