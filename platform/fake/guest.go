package fake

import (
	"encoding/binary"
	"runtime"
	"time"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/platform"
	"github.com/moat-sandbox/moat/sentry/arch"
)

// syscallLen is the length of the syscall instruction: a call's saved
// instruction pointer is its site plus this, and the kernel restarts a
// call by moving the pointer back by it.
const syscallLen = 2

// Guest is what a Program runs on: a guest thread's registers, its system
// calls and its memory, each access faulting as the CPU's would.
type Guest struct{ c *Context }

// Regs are the thread's registers; a handler reads its arguments from
// them (Rdi the signal, Rsi the siginfo, Rdx the ucontext).
func (g *Guest) Regs() *arch.Registers { return &g.c.regs }

// AddressSpace is the address space the thread runs in.
func (g *Guest) AddressSpace() *AddressSpace { return g.c.as }

// Syscall makes system call nr and returns rax. Signals delivered on the
// way run their handlers, and a call the kernel restarts is made again,
// as the syscall instruction would be.
func (g *Guest) Syscall(nr uintptr, args ...uintptr) uintptr {
	return g.syscallAt(g.c.as.p.newSite(), nr, args...)
}

// syscallAt is Syscall at a site the caller chose.
func (g *Guest) syscallAt(site uint64, nr uintptr, args ...uintptr) uintptr {
	r := &g.c.regs
	var a [6]uint64
	for i, v := range args {
		a[i] = uint64(v)
	}
	r.Rdi, r.Rsi, r.Rdx, r.R10, r.R8, r.R9 = a[0], a[1], a[2], a[3], a[4], a[5]
	r.Rax = uint64(nr)
	for {
		g.interruptPoint(site)
		r.OrigRax = r.Rax
		r.Rip = site + syscallLen
		g.c.trap(platform.Event{Kind: platform.EventSyscall})
		if g.settle(site+syscallLen, site) == site+syscallLen {
			return uintptr(r.Rax)
		}
		// Restarted: rax holds the call to make again.
	}
}

// Call is Syscall with Linux's error convention decoded.
func (g *Guest) Call(nr uintptr, args ...uintptr) (uintptr, unix.Errno) {
	return decode(g.Syscall(nr, args...))
}

// decode splits a raw return value into a value or an errno.
func decode(ret uintptr) (uintptr, unix.Errno) {
	if v := int64(ret); v < 0 && v >= -4095 {
		return 0, unix.Errno(-v)
	}
	return ret, 0
}

// Read copies guest memory at addr into b.
func (g *Guest) Read(addr uintptr, b []byte) { g.access(addr, b, false) }

// Write copies b into guest memory at addr.
func (g *Guest) Write(addr uintptr, b []byte) { g.access(addr, b, true) }

// ReadU32, ReadU64, WriteU32 and WriteU64 move one integer.
func (g *Guest) ReadU32(addr uintptr) uint32 {
	var b [4]byte
	g.Read(addr, b[:])
	return binary.LittleEndian.Uint32(b[:])
}

func (g *Guest) ReadU64(addr uintptr) uint64 {
	var b [8]byte
	g.Read(addr, b[:])
	return binary.LittleEndian.Uint64(b[:])
}

func (g *Guest) WriteU32(addr uintptr, v uint32) {
	g.Write(addr, binary.LittleEndian.AppendUint32(nil, v))
}

func (g *Guest) WriteU64(addr uintptr, v uint64) {
	g.Write(addr, binary.LittleEndian.AppendUint64(nil, v))
}

// access moves bytes page by page; a page the thread may not access in
// that way faults, and the access is made again once the kernel resumes
// the instruction (it fixed the mapping, or a handler returned).
func (g *Guest) access(addr uintptr, b []byte, write bool) {
	need := platform.ProtRead
	if write {
		need = platform.ProtWrite
	}
	for len(b) > 0 {
		n := min(len(b), int(pageSize-addr%pageSize))
		site := g.c.as.p.newSite()
		for {
			g.interruptPoint(site)
			off, prot, ok := g.c.as.Mapping(addr)
			if ok && prot&need != 0 {
				mem := g.c.as.p.memory(off, uint64(n))
				if write {
					copy(mem, b[:n])
				} else {
					copy(b[:n], mem)
				}
				break
			}
			code := int32(1) // SEGV_MAPERR
			if ok {
				code = 2 // SEGV_ACCERR
			}
			g.c.regs.Rip = site
			g.c.trap(platform.Event{Kind: platform.EventFault, Signo: int32(unix.SIGSEGV), Code: code,
				Addr: addr, Access: need, Trapno: 14})
			g.settle(site)
		}
		addr += uintptr(n)
		b = b[n:]
	}
}

// Fault makes the next instruction raise ev (a SIGFPE, a SIGILL, a
// SIGSEGV the test composes) and returns when the kernel resumes it.
func (g *Guest) Fault(ev platform.Event) {
	site := g.c.as.p.newSite()
	g.interruptPoint(site)
	g.c.regs.Rip = site
	ev.Kind = platform.EventFault
	g.c.trap(ev)
	g.settle(site)
}

// Compute runs guest code for d, without a system call: the kernel may
// interrupt it (a signal to deliver, a stop, the process's end).
func (g *Guest) Compute(d time.Duration) {
	deadline := time.Now().Add(d)
	site := g.c.as.p.newSite()
	for {
		g.interruptPoint(site)
		left := time.Until(deadline)
		if left <= 0 {
			return
		}
		timer := time.NewTimer(left)
		select {
		case <-g.c.kick:
			timer.Stop()
		case <-timer.C:
			return
		case <-g.c.released:
			runtime.Goexit()
		case <-g.c.as.killed:
			runtime.Goexit()
		}
	}
}

// interruptPoint hands an Interrupt to the kernel before the instruction
// at site runs, as the CPU would take the interrupt there.
func (g *Guest) interruptPoint(site uint64) {
	if c := g.c; c.stepLeft >= 0 && c.regs.Eflags&trapFlag != 0 {
		if c.stepLeft > 0 {
			c.stepLeft-- // this instruction runs; the trap comes before the next
		} else {
			c.regs.Rip = site
			c.trap(platform.Event{Kind: platform.EventFault, Signo: int32(unix.SIGTRAP), Code: trapTrace,
				Addr: uintptr(site), Trapno: 1})
			g.resumeBefore()
			g.settle(site)
		}
	}
	if g.c.interrupted.Swap(false) {
		g.c.regs.Rip = site
		g.c.trap(platform.Event{Kind: platform.EventInterrupt})
		g.resumeBefore()
		g.settle(site)
	}
}

// resumeBefore notes that the thread resumes at an instruction it has not
// run yet, past the point that counts instructions: a single-step lets it
// run and traps before the next one.
func (g *Guest) resumeBefore() {
	if g.c.stepLeft > 0 {
		g.c.stepLeft = 0
	}
}

// settle follows the instruction pointer the kernel set until it is one
// of targets: it runs the signal handlers it points to, and the program
// an execve loaded (which never returns). A pointer to no code faults.
func (g *Guest) settle(targets ...uint64) uint64 {
	r := &g.c.regs
	for {
		for _, t := range targets {
			if r.Rip == t {
				return t
			}
		}
		e, ok := g.c.as.p.entryAt(r.Rip)
		switch {
		case ok && e.kind == handlerEntry:
			g.runHandler(e.fn)
		case ok && e.kind == programEntry:
			g.runProgram(e.fn, false)
		default:
			g.c.trap(platform.Event{Kind: platform.EventFault, Signo: int32(unix.SIGSEGV), Code: 1,
				Addr: uintptr(r.Rip), Access: platform.ProtExec, Trapno: 14})
		}
	}
}

// runHandler runs a signal handler, then its return: the frame's return
// address is popped and jumped to, and the Restorer makes rt_sigreturn.
func (g *Guest) runHandler(h Program) {
	h(g)
	r := &g.c.regs
	ret := g.ReadU64(uintptr(r.Rsp))
	r.Rsp += 8
	r.Rip = ret
	if ret == Restorer {
		r.Rax, r.OrigRax = unix.SYS_RT_SIGRETURN, unix.SYS_RT_SIGRETURN
		r.Rip = Restorer + syscallLen
		g.c.trap(platform.Event{Kind: platform.EventSyscall})
	}
}

// runProgram runs a thread's code to its end: exit for a thread,
// exit_group for a process's main program, as returning from a thread
// function or from main does.
func (g *Guest) runProgram(fn Program, thread bool) {
	fn(g)
	if thread {
		g.Syscall(unix.SYS_EXIT, 0)
	} else {
		g.Syscall(unix.SYS_EXIT_GROUP, 0)
	}
	panic("fake: exit returned")
}
