package loader

import (
	"bytes"
	"encoding/binary"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/platform/fake"
	"github.com/moat-sandbox/moat/sentry/mm"
)

// Auxiliary vector keys, from Linux's include/uapi/linux/auxvec.h and
// arch/x86/include/uapi/asm/auxvec.h, written out here so that the
// loader's own constants are checked against them.
const (
	keyNull          = 0
	keyPhdr          = 3
	keyPhent         = 4
	keyPhnum         = 5
	keyPagesz        = 6
	keyBase          = 7
	keyFlags         = 8
	keyEntry         = 9
	keyUID           = 11
	keyEUID          = 12
	keyGID           = 13
	keyEGID          = 14
	keyPlatform      = 15
	keyHWCap         = 16
	keyClktck        = 17
	keySecure        = 23
	keyRandom        = 25
	keyHWCap2        = 26
	keyExecfn        = 31
	keySysinfoEhdr   = 33
	keyMinSigStkSize = 51
)

const stackTop = fake.MaxUserAddress - 0x100000

// initialStack is a new program's stack as it reads it.
type initialStack struct {
	argv, envp []uintptr
	auxv       [][2]uint64 // in order, AT_NULL included
	auxvStart  uintptr
	end        uintptr // just past AT_NULL
}

func u64(t *testing.T, m *mm.MemoryManager, addr uintptr) uint64 {
	t.Helper()
	return binary.LittleEndian.Uint64(read(t, m, addr, 8))
}

func cstring(t *testing.T, m *mm.MemoryManager, addr uintptr) string {
	t.Helper()
	s, err := m.CopyInString(addr, MaxArgStrlen)
	if err != nil {
		t.Fatalf("string at %#x: %v", addr, err)
	}
	return s
}

// readStack walks argc, argv, envp and the auxiliary vector from sp, as
// a C runtime's start code does.
func readStack(t *testing.T, m *mm.MemoryManager, sp uintptr) initialStack {
	t.Helper()
	var st initialStack
	argc := u64(t, m, sp)
	p := sp + 8
	for i := uint64(0); i < argc; i++ {
		st.argv = append(st.argv, uintptr(u64(t, m, p)))
		p += 8
	}
	if u64(t, m, p) != 0 {
		t.Fatalf("argv[argc] is not NULL")
	}
	for p += 8; u64(t, m, p) != 0; p += 8 {
		st.envp = append(st.envp, uintptr(u64(t, m, p)))
	}
	st.auxvStart = p + 8
	for p = st.auxvStart; ; p += 16 {
		e := [2]uint64{u64(t, m, p), u64(t, m, p+8)}
		st.auxv = append(st.auxv, e)
		if e[0] == keyNull {
			break
		}
	}
	st.end = p + 16
	return st
}

func (st initialStack) aux(t *testing.T, key uint64) (uint64, bool) {
	t.Helper()
	for _, e := range st.auxv {
		if e[0] == key {
			return e[1], true
		}
	}
	return 0, false
}

var testImage = Image{Entry: 0x7e0000001000, ExecEntry: 0x401000, Phdr: 0x400040, Phnum: 3, Base: 0x7e0000000000}

func testArgs() StackArgs {
	a := StackArgs{Argv: []string{"prog", "-x", ""}, Envv: []string{"A=1", "HOME=/root"}, Execfn: "/bin/prog",
		UID: 1000, EUID: 1001, GID: 1002, EGID: 1003, HWCap: 0x178bfbff, HWCap2: 2, MinSigStk: 3632, VDSO: 0x7ffff7fc1000}
	for i := range a.Random {
		a.Random[i] = byte(0xa0 + i)
	}
	return a
}

func TestSetupStackLaysOutArgcArgvEnvpAndAuxvAsLinux(t *testing.T) {
	m, _ := newMM(t)
	a := testArgs()
	sp, err := SetupStack(m, stackTop, testImage, a)
	if err != nil {
		t.Fatal(err)
	}
	// The x86-64 ABI: %rsp is 16-byte aligned at the entry point, and
	// points at argc.
	if sp%16 != 0 {
		t.Errorf("sp %#x not 16-byte aligned", sp)
	}
	st := readStack(t, m, sp)
	if len(st.argv) != len(a.Argv) || len(st.envp) != len(a.Envv) {
		t.Fatalf("argc %d, envc %d", len(st.argv), len(st.envp))
	}
	for i, p := range st.argv {
		if s := cstring(t, m, p); s != a.Argv[i] {
			t.Errorf("argv[%d] = %q, want %q", i, s, a.Argv[i])
		}
	}
	for i, p := range st.envp {
		if s := cstring(t, m, p); s != a.Envv[i] {
			t.Errorf("envp[%d] = %q, want %q", i, s, a.Envv[i])
		}
	}

	want := map[uint64]uint64{
		keyPhdr: uint64(testImage.Phdr), keyPhent: 56, keyPhnum: 3, keyPagesz: 4096, keyBase: uint64(testImage.Base),
		keyFlags: 0, keyEntry: uint64(testImage.ExecEntry), keyUID: 1000, keyEUID: 1001, keyGID: 1002, keyEGID: 1003,
		keyHWCap: a.HWCap, keyHWCap2: a.HWCap2, keyClktck: 100, keySecure: 0, keyMinSigStkSize: a.MinSigStk,
		keySysinfoEhdr: uint64(a.VDSO),
	}
	seen := map[uint64]bool{}
	for i, e := range st.auxv {
		if seen[e[0]] {
			t.Errorf("auxv key %d twice", e[0])
		}
		seen[e[0]] = true
		if e[0] == keyNull && (i != len(st.auxv)-1 || e[1] != 0) {
			t.Errorf("AT_NULL entry %v at %d of %d", e, i, len(st.auxv))
		}
	}
	for k, v := range want {
		if got, ok := st.aux(t, k); !ok || got != v {
			t.Errorf("auxv[%d] = %#x (present %v), want %#x", k, got, ok, v)
		}
	}
	random, _ := st.aux(t, keyRandom)
	if got := read(t, m, uintptr(random), 16); !bytes.Equal(got, a.Random[:]) {
		t.Errorf("AT_RANDOM bytes % x, want % x", got, a.Random)
	}
	execfn, _ := st.aux(t, keyExecfn)
	if s := cstring(t, m, uintptr(execfn)); s != a.Execfn {
		t.Errorf("AT_EXECFN %q, want %q", s, a.Execfn)
	}
	platformStr, _ := st.aux(t, keyPlatform)
	if s := cstring(t, m, uintptr(platformStr)); s != "x86_64" {
		t.Errorf("AT_PLATFORM %q", s)
	}
	if len(st.auxv) != len(want)+4 { // + AT_RANDOM, AT_EXECFN, AT_PLATFORM, AT_NULL
		t.Errorf("%d auxv entries: %v", len(st.auxv), st.auxv)
	}
}

func TestSetupStackPutsTheStringsAtTheTopInLinuxsOrder(t *testing.T) {
	// From low to high: the argv strings, the envp strings, the file
	// name (AT_EXECFN), then a NULL pointer's 8 bytes at the very top
	// (fs/exec.c: bprm->p starts at the stack's end less a pointer).
	m, _ := newMM(t)
	a := testArgs()
	sp, err := SetupStack(m, stackTop, testImage, a)
	if err != nil {
		t.Fatal(err)
	}
	st := readStack(t, m, sp)
	all := append(append(append([]string{}, a.Argv...), a.Envv...), a.Execfn)
	var blob []byte
	for _, s := range all {
		blob = append(append(blob, s...), 0)
	}
	start := stackTop - 8 - uintptr(len(blob))
	if got := read(t, m, start, len(blob)+8); !bytes.Equal(got, append(blob, make([]byte, 8)...)) {
		t.Fatalf("top of the stack %q, want %q and 8 zero bytes", got, blob)
	}
	if st.argv[0] != start {
		t.Errorf("argv[0] at %#x, want the lowest string at %#x", st.argv[0], start)
	}
	envStart := start + uintptr(len(a.Argv[0])+len(a.Argv[1])+len(a.Argv[2])+3)
	execfn := stackTop - 8 - uintptr(len(a.Execfn)+1)
	if st.envp[0] != envStart {
		t.Errorf("envp[0] at %#x, want %#x", st.envp[0], envStart)
	}
	// What /proc/<pid>/cmdline, environ and auxv read.
	want := mm.Layout{StackTop: stackTop, ArgStart: start, ArgEnd: envStart, EnvStart: envStart, EnvEnd: execfn,
		AuxvStart: st.auxvStart, AuxvEnd: st.end, ExecutableEntry: testImage.ExecEntry}
	if m.Layout != want {
		t.Errorf("layout %+v, want %+v", m.Layout, want)
	}
}

func TestSetupStackMapsTheStackWithAtLeast128KiBBelowTheStrings(t *testing.T) {
	// Linux's setup_arg_pages expands the stack by 128 KiB past the
	// pages of strings, within RLIMIT_STACK.
	m, _ := newMM(t)
	sp, err := SetupStack(m, stackTop, testImage, testArgs())
	if err != nil {
		t.Fatal(err)
	}
	maps := m.Maps()
	if len(maps) != 1 {
		t.Fatalf("mappings %+v", maps)
	}
	s := maps[0]
	if s.Name != "[stack]" || s.End != stackTop || s.Prot != rw || s.Start > sp || s.Start > stackTop-pageSize-128<<10 {
		t.Errorf("stack mapping %+v for sp %#x", s, sp)
	}
}

func TestSetupStackWithoutEnvironmentOrArguments(t *testing.T) {
	for _, c := range []struct {
		name       string
		argv, envv []string
	}{
		{"no environment", []string{"prog"}, nil},
		{"no arguments", nil, []string{"A=1"}},
		{"neither", nil, nil},
	} {
		m, _ := newMM(t)
		a := testArgs()
		a.Argv, a.Envv = c.argv, c.envv
		sp, err := SetupStack(m, stackTop, testImage, a)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		st := readStack(t, m, sp)
		if len(st.argv) != len(c.argv) || len(st.envp) != len(c.envv) {
			t.Errorf("%s: argc %d envc %d", c.name, len(st.argv), len(st.envp))
		}
		l := m.Layout
		if l.ArgEnd-l.ArgStart != strBytes(c.argv) || l.EnvEnd-l.EnvStart != strBytes(c.envv) || l.ArgEnd != l.EnvStart {
			t.Errorf("%s: layout %+v", c.name, l)
		}
		if _, ok := st.aux(t, keyExecfn); !ok {
			t.Errorf("%s: no AT_EXECFN", c.name)
		}
	}
}

// strBytes is what ss take on the stack.
func strBytes(ss []string) uintptr {
	n := 0
	for _, s := range ss {
		n += len(s) + 1
	}
	return uintptr(n)
}

func TestSetupStackLeavesOutSysinfoEhdrWithoutAVDSO(t *testing.T) {
	m, _ := newMM(t)
	a := testArgs()
	a.VDSO = 0
	sp, err := SetupStack(m, stackTop, testImage, a)
	if err != nil {
		t.Fatal(err)
	}
	if v, ok := readStack(t, m, sp).aux(t, keySysinfoEhdr); ok {
		t.Errorf("AT_SYSINFO_EHDR %#x without a vDSO", v)
	}
}

func TestSetupStackRefusesAStringOverMaxArgStrlen(t *testing.T) {
	// MAX_ARG_STRLEN (32 pages) counts the NUL: 131071 characters fit,
	// 131072 give E2BIG (host-checked with execve).
	if MaxArgStrlen != 32*4096 {
		t.Fatalf("MaxArgStrlen %d", MaxArgStrlen)
	}
	for _, c := range []struct {
		name string
		set  func(a *StackArgs, s string)
	}{
		{"argument", func(a *StackArgs, s string) { a.Argv = append(a.Argv, s) }},
		{"environment string", func(a *StackArgs, s string) { a.Envv = append(a.Envv, s) }},
	} {
		for n, want := range map[int]error{MaxArgStrlen - 1: nil, MaxArgStrlen: unix.E2BIG} {
			m, _ := newMM(t)
			a := testArgs()
			c.set(&a, strings.Repeat("s", n))
			if _, err := SetupStack(m, stackTop, testImage, a); err != want {
				t.Errorf("an %s of %d bytes: %v, want %v", c.name, n, err, want)
			}
		}
	}
}

func TestSetupStackLimitsStringsAndPointersToAQuarterOfTheStack(t *testing.T) {
	// With the default 8 MiB RLIMIT_STACK, Linux takes argument and
	// environment strings (the file name included) and one pointer for
	// each of them up to 2 MiB in all: host-checked to the byte.
	a := StackArgs{Argv: []string{"a"}, Execfn: "/bin/x"}
	for i := 0; i < 20; i++ {
		a.Envv = append(a.Envv, strings.Repeat("e", 100000))
	}
	used := len(a.Execfn) + 1 + 2 + 20*100001 + (1+21)*8 // the last string's pointer too
	last := MaxArgTotal - used - 1
	for extra, want := range map[int]error{0: nil, 1: unix.E2BIG} {
		m, _ := newMM(t)
		b := a
		b.Envv = append(append([]string{}, a.Envv...), strings.Repeat("l", last+extra))
		if _, err := SetupStack(m, stackTop, testImage, b); err != want {
			t.Errorf("%d bytes of strings and pointers: %v, want %v", MaxArgTotal+extra, err, want)
		}
		if want != nil && len(m.Maps()) != 0 {
			t.Errorf("E2BIG left a stack mapped: %+v", m.Maps())
		}
	}
}
