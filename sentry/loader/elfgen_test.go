package loader

import (
	"bytes"
	"encoding/binary"
	"sync"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/platform/fake"
	"github.com/moat-sandbox/moat/sentry/memfile"
	"github.com/moat-sandbox/moat/sentry/mm"
)

// testELF is an ELF file for the tests, built field by field so that each
// test can break exactly one of them.
type testELF struct {
	ident     [16]byte
	typ       uint16
	machine   uint16
	version   uint32
	entry     uint64
	phoff     uint64
	phentsize uint16
	phnum     int // -1: len(phdrs)
	phdrs     []progHeader
	size      int            // file size
	at        map[int][]byte // bytes placed at file offsets, over the pattern
}

// Where the test programs live.
const (
	execBase  = 0x400000 // ET_EXEC text
	execData  = 0x602000 // ET_EXEC data and bss
	interpOff = 0x1800   // file offset of a PT_INTERP string
)

// pattern is the byte a test file holds at off, where nothing else was
// put: never zero, so that cleared bytes stand out.
func pattern(off int) byte { return byte(off%251 + 1) }

// execELF returns a well-formed static executable: text (read, execute)
// at execBase holding the headers, data (read, write) at execData with a
// bss of two pages and a half past it, and a PT_GNU_STACK.
func execELF() *testELF {
	e := &testELF{typ: unix.ET_EXEC, machine: unix.EM_X86_64, version: unix.EV_CURRENT, entry: execBase + 0x1000,
		phoff: ehdrSize, phentsize: phdrSize, phnum: -1, size: 0x2100, at: map[int][]byte{}}
	copy(e.ident[:], "\x7fELF")
	e.ident[unix.EI_CLASS], e.ident[unix.EI_DATA], e.ident[unix.EI_VERSION] = unix.ELFCLASS64, unix.ELFDATA2LSB, unix.EV_CURRENT
	e.phdrs = []progHeader{
		{typ: unix.PT_LOAD, flags: unix.PF_R | unix.PF_X, off: 0, vaddr: execBase, filesz: 0x2000, memsz: 0x2000, align: 0x1000},
		{typ: unix.PT_LOAD, flags: unix.PF_R | unix.PF_W, off: 0x2000, vaddr: execData, filesz: 0x100, memsz: 0x2800, align: 0x1000},
		{typ: unix.PT_GNU_STACK, flags: unix.PF_R | unix.PF_W},
	}
	return e
}

// dynELF returns a well-formed position-independent executable (or
// interpreter): the same segments as execELF's, linked at 0.
func dynELF() *testELF {
	e := execELF()
	e.typ = unix.ET_DYN
	e.entry -= execBase
	e.phdrs[0].vaddr = 0
	e.phdrs[1].vaddr = execData - execBase
	return e
}

// withInterp adds a PT_INTERP naming name (with its NUL) to e.
func (e *testELF) withInterp(name string) *testELF {
	s := append([]byte(name), 0)
	e.at[interpOff] = s
	e.phdrs = append(e.phdrs, progHeader{typ: unix.PT_INTERP, flags: unix.PF_R, off: interpOff, filesz: uint64(len(s)), memsz: uint64(len(s)), align: 1})
	return e
}

// bytes lays the file out: pattern, the extra bytes, the header and the
// program headers (what fits in the file of each).
func (e *testELF) bytes() []byte {
	b := make([]byte, e.size)
	for i := range b {
		b[i] = pattern(i)
	}
	for off, s := range e.at {
		if off < len(b) {
			copy(b[off:], s)
		}
	}
	if len(b) < ehdrSize {
		var h [ehdrSize]byte
		e.header(h[:])
		return append(b[:0], h[:len(b)]...)
	}
	e.header(b)
	le := binary.LittleEndian
	for i, ph := range e.phdrs {
		o := e.phoff + uint64(i)*phdrSize
		if o+phdrSize > uint64(len(b)) || o+phdrSize < o {
			break
		}
		p := b[o:]
		le.PutUint32(p[0:], ph.typ)
		le.PutUint32(p[4:], ph.flags)
		le.PutUint64(p[8:], ph.off)
		le.PutUint64(p[16:], ph.vaddr)
		le.PutUint64(p[24:], ph.vaddr) // p_paddr
		le.PutUint64(p[32:], ph.filesz)
		le.PutUint64(p[40:], ph.memsz)
		le.PutUint64(p[48:], ph.align)
	}
	return b
}

func (e *testELF) header(b []byte) {
	le := binary.LittleEndian
	copy(b, e.ident[:])
	le.PutUint16(b[16:], e.typ)
	le.PutUint16(b[18:], e.machine)
	le.PutUint32(b[20:], e.version)
	le.PutUint64(b[24:], e.entry)
	le.PutUint64(b[32:], e.phoff)
	le.PutUint64(b[40:], 0) // e_shoff
	le.PutUint32(b[48:], 0) // e_flags
	le.PutUint16(b[52:], ehdrSize)
	le.PutUint16(b[54:], e.phentsize)
	n := e.phnum
	if n < 0 {
		n = len(e.phdrs)
	}
	le.PutUint16(b[56:], uint16(n))
}

// file is an executable's bytes as the loader reads them.
func (e *testELF) file() *bytes.Reader { return bytes.NewReader(e.bytes()) }

// One memory file serves the whole test binary (each maps a large range).
var (
	memOnce sync.Once
	mem     *memfile.File
	memErr  error
)

// newMM returns an empty memory manager over a fake address space, which
// shows what the loader mapped as the host would map it.
func newMM(t testing.TB) (*mm.MemoryManager, *fake.AddressSpace) {
	t.Helper()
	memOnce.Do(func() { mem, memErr = memfile.New() })
	if memErr != nil {
		t.Fatalf("memory file: %v", memErr)
	}
	as, err := fake.New(mem).NewAddressSpace()
	if err != nil {
		t.Fatal(err)
	}
	m := mm.New(mem, as, fake.MaxUserAddress)
	m.SetMmapBase(fake.MaxUserAddress - StackSize - 1<<30)
	t.Cleanup(m.Release)
	return m, as.(*fake.AddressSpace)
}

// read returns n bytes of guest memory at addr, failing the test if they
// are not all readable.
func read(t *testing.T, m *mm.MemoryManager, addr uintptr, n int) []byte {
	t.Helper()
	b := make([]byte, n)
	if _, err := m.CopyIn(addr, b); err != nil {
		t.Fatalf("read %d bytes at %#x: %v", n, addr, err)
	}
	return b
}
