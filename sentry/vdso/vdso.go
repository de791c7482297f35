// Package vdso is moat's virtual dynamic shared object: a small ELF shared
// library, "linux-vdso.so.1", that answers clock_gettime, gettimeofday, time,
// getcpu and clock_getres inside the guest, without the trap into the sentry
// a system call costs (docs/SPECIFICATION.md, "Costs the design relies on").
//
// # What it is
//
// Image is the library (src/vdso.c linked with src/vdso.lds; see
// vdso_build_test.go). It exports, with version LINUX_2.6 as Linux's x86-64
// vDSO does, __vdso_clock_gettime, __vdso_gettimeofday, __vdso_time,
// __vdso_getcpu and __vdso_clock_getres, and the weak unprefixed aliases
// clock_gettime, gettimeofday, time, getcpu and clock_getres. glibc finds it
// through AT_SYSINFO_EHDR, both in ld.so (dynamic programs) and in
// _dl_non_dynamic_init (static ones); glibc_test.go runs both.
//
// It reads the time from a parameter page the sentry keeps current (Params):
// a straight line from TSC ticks to nanoseconds under a sequence counter.
// Whatever it cannot answer from the page — a clock other than the realtime
// and monotonic families, a page marked unusable (no invariant TSC), a writer
// that does not finish — it passes on with the `syscall` instruction, which
// traps into the sentry like any guest system call: slower, still right.
//
// # How the kernel maps it
//
// One Params per sandbox, over ParamsSize bytes of the memory file that the
// sentry allocates once, keeps mapped read-write for Params, and never frees
// while the sandbox runs. The image is the same for every sandbox; its pages
// are filled once with Image() (zero after len(Image()) up to ImageSize()).
//
// Every new guest address space (execve, and the first one) gets one
// mapping of MappingSize() bytes at a page-aligned address base the kernel
// chooses (an mmap-style search below the stack, as Linux does):
//
//	[base, base+ParamsSize)                  the parameter page   PROT_READ, max PROT_READ, shared
//	[base+ParamsSize, base+MappingSize())    the image            PROT_READ|PROT_EXEC, max the same
//
// and passes AT_SYSINFO_EHDR = base+ParamsSize (the image, not the
// parameters; loader.StackArgs.VDSO). The image finds its parameters
// RIP-relatively, exactly ParamsSize bytes before its ELF header, so the two
// must stay adjacent and in that order; nothing in the image is relocated.
// The parameter pages must be the memory file's pages Params writes, shared
// by every address space of the sandbox (never a private copy: a copy stops
// following the sentry's updates). Nothing may make them writable in the
// guest (not mprotect, not a debugger's forced write), and a fork inherits
// both mappings as they are. In /proc/<pid>/maps, name them as Linux does
// (debuggers and profilers look for the second name):
//
//	[vvar]  [vdso]
//
// The sentry side, once per sandbox:
//
//	p := vdso.NewParams(paramPages, bootClockOffset-bootMono) // guest MONOTONIC = host + offset
//	p.Start(stop) // re-draws the line now, then every second; close stop at the end
//
// and, so that the guest never sees the two paths disagree, clock_gettime,
// gettimeofday and time served by the sentry (when the vDSO falls back, or
// for programs that trap on purpose) should read p.Now(), the same line the
// vDSO reads.
package vdso

import "sync"

// Layout of the parameter page. vdso_build_test.go passes these to the C
// source as -D definitions, where static assertions check them against its
// structure.
const (
	// ParamsSize is the size of the parameter area placed right before the
	// image: one page.
	ParamsSize = 4096

	paramSeq      = 0  // uint64: odd while the sentry writes, readers retry
	paramFlags    = 8  // uint32: flagTSC when the line may be used
	paramShift    = 12 // uint32: the line's fixed-point shift
	paramTSCBase  = 16 // uint64: TSC at the line's base
	paramMult     = 24 // uint64: nanoseconds per tick << shift
	paramMonoBase = 32 // int64: guest CLOCK_MONOTONIC at paramTSCBase, ns
	paramRealBase = 40 // int64: CLOCK_REALTIME at paramTSCBase, ns
	paramTSCHz    = 48 // uint64: the measured TSC frequency; informational
	paramCPUTrap  = 56 // uint32: not 0 once getcpu must trap (Params.TrapGetcpu)

	// flagTSC says the line may be used; without it every call traps.
	flagTSC = 1

	// lineShift is the fixed-point shift of paramMult.
	lineShift = 32
)

// linuxVersionCode is moat's uname release (kernel.Release, 6.1.0) as
// LINUX_VERSION_CODE, for the image's Linux note.
const linuxVersionCode = 6<<16 | 1<<8 | 0

const pageSize = 4096

// Image returns the vDSO's ELF image, to be copied into the memory file once
// per sandbox (or once per sentry). The caller must not modify it.
func Image() []byte { return vdsoImage }

// ImageSize is the image's size rounded up to whole pages: the length of its
// read-execute mapping.
func ImageSize() int { return (len(vdsoImage) + pageSize - 1) &^ (pageSize - 1) }

// MappingSize is the length of a guest's whole vDSO mapping: the parameter
// area followed by the image.
func MappingSize() int { return ParamsSize + ImageSize() }

var imagePages struct {
	once sync.Once
	b    []byte
}

// ImagePages returns the image zero-padded to ImageSize(), ready to copy
// into the pages of its mapping.
func ImagePages() []byte {
	imagePages.once.Do(func() {
		b := make([]byte, ImageSize())
		copy(b, vdsoImage)
		imagePages.b = b
	})
	return imagePages.b
}
