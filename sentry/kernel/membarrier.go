package kernel

import (
	"runtime"
	"time"

	"github.com/moat-sandbox/moat/platform"
)

// Membarrier makes every other thread of the caller's address space (or,
// with all, of the sandbox) pass through a full memory barrier and a core
// serialisation before it returns, as membarrier(2)'s expedited commands
// promise: a thread that was running guest code when the call began has
// left it since.
//
// Why leaving guest code is the barrier: on x86-64 a thread leaves guest
// code only through the host kernel (a trap, a fault or the signal
// Interrupt sends on systrap, a VM exit on KVM), and that entry drains the
// thread's store buffer and serialises its core. A thread that was not
// running guest code when the call began (blocked, or in the sentry) will
// resume only after the sentry writes and publishes its registers, which
// the caller's stores came before: x86's total store order makes the
// thread's later loads see them. So only the threads in guest code now
// need to be made to leave it: each is interrupted (which a guest cannot
// see: the run loop resumes it at once), and the call waits until it has
// left the Switch it was in.
func (t *Task) Membarrier(all bool) {
	var running []platform.Context
	collect := func(tg *ThreadGroup) {
		tg.mu.Lock()
		for _, x := range tg.tasks {
			if x != t && x.ctx != nil && x.ctx.Running() > 0 {
				running = append(running, x.ctx)
			}
		}
		tg.mu.Unlock()
	}
	// A process sharing the address space without being a thread of the
	// caller's (a vfork child, CLONE_VM) is rare: the whole sandbox is
	// swept then, as for the global commands.
	if !all && t.mm.Users() > t.tg.threadCount() {
		all = true
	}
	if all {
		t.k.treeMu.Lock()
		for _, tg := range t.k.tgs {
			collect(tg)
		}
		t.k.treeMu.Unlock()
	} else {
		collect(t.tg)
	}
	deadline := time.Now().Add(membarrierPatience)
	waits := make([]interrupted, len(running))
	for i, c := range running {
		waits[i] = interrupt(c)
	}
	for i := 0; len(waits) > 0 && time.Now().Before(deadline); i++ {
		kept := waits[:0]
		for _, w := range waits {
			switch {
			case w.left():
			case time.Since(w.at) > membarrierReinterrupt:
				kept = append(kept, interrupt(w.c))
			default:
				kept = append(kept, w)
			}
		}
		waits = kept
		if i < 100 {
			runtime.Gosched()
		} else {
			time.Sleep(50 * time.Microsecond)
		}
	}
}

// membarrierPatience bounds the wait for interrupted threads: a host that
// keeps an interrupted thread off its CPU for this long has left it out
// of guest code anyway, whatever its running time still says.
const membarrierPatience = time.Second

// membarrierReinterrupt is how long an interrupted thread may seem to run
// the same Switch before it is interrupted again, from a new start: the
// test in left can miss a short Switch between two looks.
const membarrierReinterrupt = 5 * time.Millisecond

// interrupted is a context interrupted at a time.
type interrupted struct {
	c  platform.Context
	at time.Time
}

func interrupt(c platform.Context) interrupted {
	w := interrupted{c: c, at: time.Now()}
	c.Interrupt()
	return w
}

// left reports whether the context has left the Switch it was in when
// interrupted: it runs no guest code now, or its current Switch is younger
// than the interrupt (the old one is older), with a margin of 1/64 for the
// platforms' clocks, which may count time a little differently than the
// sentry's.
func (w interrupted) left() bool {
	r := w.c.Running()
	return r == 0 || r+r/64 < time.Since(w.at)
}

// threadCount is how many tasks the process has.
func (tg *ThreadGroup) threadCount() int {
	tg.mu.Lock()
	defer tg.mu.Unlock()
	return len(tg.tasks)
}
