package fake

import (
	"encoding/binary"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/moat-sandbox/moat/platform"
	"github.com/moat-sandbox/moat/sentry/arch"
)

// fxsaveSize is the FXSAVE area: the floating-point state of a CPU with
// no XSAVE components, which is all a fake thread has.
const fxsaveSize = 512

// Context implements platform.Context as a coroutine: Switch hands the
// registers to the guest's goroutine and waits for its next event; only
// one of the two runs at a time, and the registers pass with the turn.
type Context struct {
	as   *AddressSpace
	regs arch.Registers // the guest's registers while it runs
	fp   []byte

	started     bool          // the guest's goroutine exists (only Switch)
	resume      chan struct{} // the kernel's turn is over
	events      chan platform.Event
	interrupted atomic.Bool
	kick        chan struct{} // wakes a guest in Compute (capacity 1)
	resumedAt   atomic.Int64  // when the guest's turn began, in ns; 0 while it is the kernel's
	// stepLeft is how many instructions run before a single-step trap, as
	// the trap flag in eflags makes the CPU take one after the first
	// instruction the kernel resumes the thread at; -1 when it is clear.
	stepLeft int

	releaseOnce sync.Once
	released    chan struct{}
}

var _ platform.Context = (*Context)(nil)

func newContext(as *AddressSpace) *Context {
	c := &Context{as: as, fp: make([]byte, fxsaveSize), resume: make(chan struct{}), stepLeft: -1,
		events: make(chan platform.Event), kick: make(chan struct{}, 1), released: make(chan struct{})}
	le := binary.LittleEndian
	le.PutUint16(c.fp[0:], 0x37f)   // FCW: the x87 state after FNINIT
	le.PutUint32(c.fp[24:], 0x1f80) // MXCSR
	le.PutUint32(c.fp[28:], 0xffff) // MXCSR_MASK
	return c
}

// Switch implements platform.Context.
func (c *Context) Switch(regs *arch.Registers) (platform.Event, error) {
	if c.dead() {
		return platform.Event{}, errKilled
	}
	c.regs = *regs
	start := time.Now()
	c.resumedAt.Store(start.UnixNano())
	if !c.started {
		c.started = true
		go c.runGuest()
	} else {
		select {
		case c.resume <- struct{}{}:
		case <-c.released:
			return platform.Event{}, errKilled
		case <-c.as.killed:
			return platform.Event{}, errKilled
		}
	}
	select {
	case ev := <-c.events:
		c.resumedAt.Store(0)
		ev.GuestTime = time.Since(start)
		*regs = c.regs
		return ev, nil
	case <-c.released:
		return platform.Event{}, errKilled
	case <-c.as.killed:
		return platform.Event{}, errKilled
	}
}

// Interrupt implements platform.Context.
func (c *Context) Interrupt() {
	c.interrupted.Store(true)
	select {
	case c.kick <- struct{}{}:
	default:
	}
}

// FPState implements platform.Context.
func (c *Context) FPState() []byte { return c.fp }

// Park implements platform.Context: no one spins here.
func (c *Context) Park() {}

// Running implements platform.Context.
func (c *Context) Running() time.Duration {
	if t := c.resumedAt.Load(); t != 0 {
		return time.Duration(time.Now().UnixNano() - t)
	}
	return 0
}

// Release implements platform.Context: the guest's goroutine ends at its
// next event.
func (c *Context) Release() { c.releaseOnce.Do(func() { close(c.released) }) }

func (c *Context) dead() bool {
	select {
	case <-c.released:
		return true
	case <-c.as.killed:
		return true
	default:
		return false
	}
}

// trap ends the guest's turn with ev and waits for the next one. A thread
// whose context is released or killed meanwhile never runs again.
func (c *Context) trap(ev platform.Event) {
	select {
	case c.events <- ev:
	case <-c.released:
		runtime.Goexit()
	case <-c.as.killed:
		runtime.Goexit()
	}
	select {
	case <-c.resume:
	case <-c.released:
		runtime.Goexit()
	case <-c.as.killed:
		runtime.Goexit()
	}
	c.stepLeft = -1
	if c.regs.Eflags&trapFlag != 0 {
		c.stepLeft = 1
	}
}

// trapFlag is eflags' TF.
const trapFlag = 0x100

// trapTrace is the si_code of a single-step's SIGTRAP.
const trapTrace = 2

// runGuest is the guest thread's first turn: it starts at a program's
// entry (the init process, a fresh address space after execve), or it is
// the child of a Guest.Clone returning from the clone call.
func (c *Context) runGuest() {
	g := &Guest{c: c}
	if e, ok := c.as.p.entryAt(c.regs.Rip); ok && e.kind == programEntry {
		g.runProgram(e.fn, false)
	}
	ch, ok := c.as.p.childOf(c.regs.R15)
	if !ok {
		panic(fmt.Sprintf("fake: a guest thread starts at %#x, which is no program's entry, and R15 (%#x) names no clone's child", c.regs.Rip, c.regs.R15))
	}
	g.settle(ch.site + syscallLen) // a signal may come before the child's first instruction
	g.runProgram(ch.fn, ch.thread)
}
