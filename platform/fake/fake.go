// Package fake is a platform that runs no guest code, for tests of the
// kernel that need no root, no stub and no seccomp. A guest thread is a Go
// function (a Program) run as a coroutine of the kernel's task loop: each
// system call, memory access or fault it makes stops it and hands an Event
// to the kernel, as a trap would, and the kernel's answer (the registers
// Switch is given back) decides what it does next: return from the call,
// restart it, run a signal handler, or start the program an execve loaded.
// Address spaces keep the mappings the kernel asked for, and a guest's
// memory accesses go through them, so protections and copy-on-write behave
// as the stub's page tables would. It must never be used outside tests.
package fake

import (
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/moat-sandbox/moat/platform"
	"github.com/moat-sandbox/moat/sentry/memfile"
)

// MaxUserAddress is the end of the guest's address range, as systrap's.
const MaxUserAddress = 0x7f00_0000_0000

// Where fake code lives. Entries are addresses a program or a signal
// handler starts at (an ELF's entry point, sa_handler); sites are the
// addresses of the guest's "instructions", one per call of a Guest method,
// so that a register set the kernel hands back says which instruction it
// resumes. Neither range is ever read: no code is there.
const (
	EntryBase = 0x40_1000
	entryStep = 16
	// MaxEntries is how many programs and handlers one platform holds, so
	// that an ELF image mapping [EntryBase, EntryBase+MaxEntries*16)
	// covers every entry point.
	MaxEntries = 1 << 14
	siteBase   = 0x5f00_0000_0000
	siteStep   = 16
	// Restorer is the address a signal handler's frame returns to when the
	// guest set it as sa_restorer: the fake's rt_sigreturn trampoline.
	Restorer = siteBase - siteStep
)

// Program is the code of a guest thread.
type Program func(g *Guest)

// entryKind says how an entry point is entered.
type entryKind int

const (
	programEntry entryKind = iota // a program's start: it never returns
	handlerEntry                  // a signal handler: it returns through its frame
)

type entry struct {
	kind entryKind
	fn   Program
}

// child is what a clone made by Guest.Clone runs.
type child struct {
	fn     Program
	thread bool   // a thread (CLONE_THREAD) ends with exit, a process with exit_group
	site   uint64 // the clone call's instruction, which the child returns from
}

// Platform implements platform.Platform over the memory file.
type Platform struct {
	mf *memfile.File

	mu       sync.Mutex
	entries  []entry
	children map[uint64]child // by the token a clone's child finds in R15
	spaces   []*AddressSpace

	nextSite  atomic.Uint64
	nextToken atomic.Uint64
}

var _ platform.Platform = (*Platform)(nil)

// New returns a platform whose address spaces map pages of mf.
func New(mf *memfile.File) *Platform {
	return &Platform{mf: mf, children: make(map[uint64]child)}
}

// NewAddressSpace implements platform.Platform.
func (p *Platform) NewAddressSpace() (platform.AddressSpace, error) {
	as := &AddressSpace{p: p, killed: make(chan struct{})}
	p.mu.Lock()
	p.spaces = append(p.spaces, as)
	p.mu.Unlock()
	return as, nil
}

// MaxUserAddress implements platform.Platform.
func (p *Platform) MaxUserAddress() uintptr { return MaxUserAddress }

// AddressSpaces returns every address space made so far, released ones
// included, in the order they were made.
func (p *Platform) AddressSpaces() []*AddressSpace {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]*AddressSpace(nil), p.spaces...)
}

// Program returns the entry point of prog: an ELF whose entry is this
// address starts prog when it is executed.
func (p *Platform) Program(prog Program) uint64 { return p.addEntry(programEntry, prog) }

// Handler returns the address of a signal handler running h, for
// sa_handler. When h returns, the guest returns through the signal frame
// (to Restorer, if the guest set it as sa_restorer).
func (p *Platform) Handler(h Program) uint64 { return p.addEntry(handlerEntry, h) }

func (p *Platform) addEntry(kind entryKind, fn Program) uint64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.entries) == MaxEntries {
		panic("fake: too many entry points")
	}
	p.entries = append(p.entries, entry{kind, fn})
	return EntryBase + uint64(len(p.entries)-1)*entryStep
}

// entryAt returns the program or handler at addr.
func (p *Platform) entryAt(addr uint64) (entry, bool) {
	if addr < EntryBase || (addr-EntryBase)%entryStep != 0 {
		return entry{}, false
	}
	i := (addr - EntryBase) / entryStep
	p.mu.Lock()
	defer p.mu.Unlock()
	if i >= uint64(len(p.entries)) {
		return entry{}, false
	}
	return p.entries[i], true
}

// newSite returns the address of a new guest instruction.
func (p *Platform) newSite() uint64 { return siteBase + p.nextSite.Add(1)*siteStep }

// addChild records what the child of a clone runs, and returns the token
// the guest passes it in R15 (clone copies every register to the child).
func (p *Platform) addChild(c child) uint64 {
	tok := p.nextToken.Add(1)
	p.mu.Lock()
	p.children[tok] = c
	p.mu.Unlock()
	return tok
}

func (p *Platform) childOf(tok uint64) (child, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	c, ok := p.children[tok]
	return c, ok
}

// memory returns the sentry's view of [off, off+n) of the memory file.
func (p *Platform) memory(off, n uint64) []byte { return p.mf.Slice(off, n) }

// errKilled is what Switch returns once the address space was killed or
// the context released.
var errKilled = fmt.Errorf("fake: the guest thread was killed")
