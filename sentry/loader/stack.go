package loader

import (
	"encoding/binary"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/platform"
	"github.com/moat-sandbox/moat/sentry/mm"
)

// Auxiliary vector keys.
const (
	atNull          = 0
	atPhdr          = 3
	atPhent         = 4
	atPhnum         = 5
	atPagesz        = 6
	atBase          = 7
	atFlags         = 8
	atEntry         = 9
	atUID           = 11
	atEUID          = 12
	atGID           = 13
	atEGID          = 14
	atPlatform      = 15
	atHWCap         = 16
	atClktck        = 17
	atSecure        = 23
	atRandom        = 25
	atHWCap2        = 26
	atExecfn        = 31
	atSysinfoEhdr   = 33
	atMinSigStkSz   = 51
	stackGuardBytes = 8
)

// StackArgs is what a new program finds on its stack.
type StackArgs struct {
	Argv, Envv []string
	Execfn     string   // AT_EXECFN: the path execve was given
	Random     [16]byte // AT_RANDOM
	UID, EUID  uint32
	GID, EGID  uint32
	Secure     bool // AT_SECURE: the exec changed ids or gained capabilities
	HWCap      uint64
	HWCap2     uint64
	MinSigStk  uint64
	VDSO       uintptr // AT_SYSINFO_EHDR, 0 for none
}

// Linux's limits on what execve copies.
const (
	MaxArgStrlen = 32 * pageSize // one argument or environment string
	MaxArgTotal  = 1 << 21       // all of them and their pointers: a quarter of an 8 MiB stack
)

// StackSize is how far below its top a program's stack may reach before it
// meets the mapping area (the stack itself grows on demand, within
// RLIMIT_STACK).
const StackSize = 8 << 20

// stackInitial is how much stack a new program gets mapped below its
// arguments, as Linux expands it at exec.
const stackInitial = 128 << 10

// SetupStack maps the stack just below top and writes the initial process
// stack: argc, argv, envp, the auxiliary vector and the strings they point
// to, in Linux's order. It returns the initial stack pointer.
func SetupStack(m *mm.MemoryManager, top uintptr, img Image, a StackArgs) (uintptr, error) {
	total := len(a.Execfn) + 1
	for _, s := range append(a.Argv, a.Envv...) {
		if len(s)+1 > MaxArgStrlen {
			return 0, unix.E2BIG
		}
		total += len(s) + 1
	}
	// Linux counts a pointer for each string with the strings: they all
	// go on the stack (fs/exec.c, bprm_stack_limits).
	if total+(len(a.Argv)+len(a.Envv))*8 > MaxArgTotal {
		return 0, unix.E2BIG
	}
	size := (uintptr(total+(len(a.Argv)+len(a.Envv)+64)*8+pageSize-1) &^ (pageSize - 1)) + stackInitial
	if _, err := m.MMap(mm.MMapOpts{Addr: top - size, Length: size, Prot: platform.ProtRead | platform.ProtWrite,
		Fixed: true, GrowsDown: true, Name: "[stack]"}); err != nil {
		return 0, err
	}

	// Strings, from the top: an 8-byte guard, execfn, then the envp and
	// argv strings, so argv strings come first in memory as on Linux; then
	// the platform name and the AT_RANDOM bytes.
	var strs []byte
	addrs := make([]int, 0, len(a.Argv)+len(a.Envv)) // offsets in strs, argv first
	for _, s := range append(a.Argv, a.Envv...) {
		addrs = append(addrs, len(strs))
		strs = append(append(strs, s...), 0)
	}
	execfnOff := len(strs)
	strs = append(append(strs, a.Execfn...), 0)
	strBase := top - stackGuardBytes - uintptr(len(strs))
	if _, err := m.CopyOut(strBase, strs); err != nil {
		return 0, err
	}
	sp := strBase
	sp -= 7
	platformStr := sp
	if _, err := m.CopyOut(platformStr, []byte("x86_64\x00")); err != nil {
		return 0, err
	}
	sp = (sp - 16) &^ 15
	random := sp
	if _, err := m.CopyOut(random, a.Random[:]); err != nil {
		return 0, err
	}

	auxv := []uint64{
		atPhdr, uint64(img.Phdr), atPhent, phdrSize, atPhnum, uint64(img.Phnum),
		atPagesz, pageSize, atBase, uint64(img.Base), atFlags, 0, atEntry, uint64(img.ExecEntry),
		atUID, uint64(a.UID), atEUID, uint64(a.EUID), atGID, uint64(a.GID), atEGID, uint64(a.EGID),
		atSecure, boolWord(a.Secure), atRandom, uint64(random), atHWCap, a.HWCap, atHWCap2, a.HWCap2,
		atClktck, 100, atExecfn, uint64(strBase) + uint64(execfnOff), atPlatform, uint64(platformStr),
		atMinSigStkSz, a.MinSigStk,
	}
	if a.VDSO != 0 {
		auxv = append(auxv, atSysinfoEhdr, uint64(a.VDSO))
	}
	auxv = append(auxv, atNull, 0)

	// argc, argv[], NULL, envp[], NULL, auxv[]: 16-byte aligned at argc.
	words := 1 + len(a.Argv) + 1 + len(a.Envv) + 1 + len(auxv)
	sp = (sp - uintptr(words*8)) &^ 15
	vec := make([]byte, 0, words*8)
	le := binary.LittleEndian
	vec = le.AppendUint64(vec, uint64(len(a.Argv)))
	for i, off := range addrs {
		if i == len(a.Argv) {
			vec = le.AppendUint64(vec, 0)
		}
		vec = le.AppendUint64(vec, uint64(strBase)+uint64(off))
	}
	if len(a.Argv) == len(addrs) {
		vec = le.AppendUint64(vec, 0)
	}
	vec = le.AppendUint64(vec, 0)
	for _, v := range auxv {
		vec = le.AppendUint64(vec, v)
	}
	if _, err := m.CopyOut(sp, vec); err != nil {
		return 0, err
	}
	envStart := strBase
	if len(a.Envv) > 0 {
		envStart += uintptr(addrs[len(a.Argv)])
	} else {
		envStart += uintptr(execfnOff)
	}
	m.Layout = mm.Layout{StackTop: top, ArgStart: strBase, ArgEnd: envStart, EnvStart: envStart,
		EnvEnd: strBase + uintptr(execfnOff), AuxvStart: sp + uintptr(8*(words-len(auxv))),
		AuxvEnd: sp + uintptr(8*words), ExecutableEntry: img.ExecEntry}
	return sp, nil
}

func boolWord(b bool) uint64 {
	if b {
		return 1
	}
	return 0
}
