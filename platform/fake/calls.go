package fake

import (
	"encoding/binary"

	"golang.org/x/sys/unix"
)

// The calls a test's guest makes most, written as libc would make them.

// Mmap maps n bytes of anonymous private read-write memory, or fails the
// test's guest with a SIGSEGV-free errno.
func (g *Guest) Mmap(n uintptr) (uintptr, unix.Errno) {
	return g.Call(unix.SYS_MMAP, 0, n, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS, ^uintptr(0), 0)
}

// Alloc is Mmap for memory the guest cannot do without: it panics if the
// kernel refuses.
func (g *Guest) Alloc(n uintptr) uintptr {
	addr, errno := g.Mmap(n)
	if errno != 0 {
		panic("fake: mmap for the guest's own memory failed: " + errno.Error())
	}
	return addr
}

// CString puts s, NUL-terminated, in new guest memory.
func (g *Guest) CString(s string) uintptr {
	addr := g.Alloc(uintptr(len(s) + 1))
	g.Write(addr, append([]byte(s), 0))
	return addr
}

// CStrings puts a NULL-terminated array of strings (argv, envp) in new
// guest memory.
func (g *Guest) CStrings(ss []string) uintptr {
	arr := g.Alloc(uintptr(8 * (len(ss) + 1)))
	for i, s := range ss {
		g.WriteU64(arr+uintptr(8*i), uint64(g.CString(s)))
	}
	return arr
}

// Clone makes clone(2) with flags; the child runs child. stack is the
// child's stack pointer (0: the caller's), and tls, ptid and ctid are as
// clone's.
func (g *Guest) Clone(flags uint64, stack, ptid, ctid, tls uintptr, child Program) (uintptr, unix.Errno) {
	r := &g.c.regs
	site := g.c.as.p.newSite()
	saved := r.R15
	r.R15 = g.c.as.p.addChild(childOf(child, flags, site))
	ret, errno := g.callAt(site, unix.SYS_CLONE, uintptr(flags), stack, ptid, ctid, tls)
	r.R15 = saved
	return ret, errno
}

func childOf(fn Program, flags uint64, site uint64) child {
	return child{fn: fn, thread: flags&unix.CLONE_THREAD != 0, site: site}
}

// Fork is fork(2): clone with SIGCHLD. It returns the child's pid.
func (g *Guest) Fork(child Program) (int, unix.Errno) {
	pid, errno := g.Clone(uint64(unix.SIGCHLD), 0, 0, 0, 0, child)
	return int(pid), errno
}

// threadStack is the size of a stack Thread makes.
const threadStack = 64 << 10

// Thread starts a thread of the process running fn, as pthread_create
// does: its own stack, and a tid word the kernel clears (and wakes) when
// it exits. It returns the thread's id and the tid word's address.
func (g *Guest) Thread(fn Program) (tid int, tidAddr uintptr, errno unix.Errno) {
	stack, errno := g.Mmap(threadStack)
	if errno != 0 {
		return 0, 0, errno
	}
	tidAddr = stack // the lowest word: the stack grows down, far from it
	flags := uint64(unix.CLONE_VM | unix.CLONE_FS | unix.CLONE_FILES | unix.CLONE_SIGHAND | unix.CLONE_THREAD |
		unix.CLONE_SYSVSEM | unix.CLONE_PARENT_SETTID | unix.CLONE_CHILD_CLEARTID)
	ret, errno := g.Clone(flags, stack+threadStack, tidAddr, tidAddr, 0, fn)
	return int(ret), tidAddr, errno
}

// Join waits until the thread whose tid word is at tidAddr has exited,
// as pthread_join does.
func (g *Guest) Join(tidAddr uintptr) {
	for {
		v := g.ReadU32(tidAddr)
		if v == 0 {
			return
		}
		g.Call(unix.SYS_FUTEX, tidAddr, futexWait, uintptr(v), 0)
	}
}

// Wait is wait4(pid, &status, options, NULL): the child's pid and status.
func (g *Guest) Wait(pid int, options int) (int, unix.WaitStatus, unix.Errno) {
	status := g.Alloc(8)
	ret, errno := g.Call(unix.SYS_WAIT4, uintptr(pid), status, uintptr(options), 0)
	return int(ret), unix.WaitStatus(g.ReadU32(status)), errno
}

// SigAction is a struct sigaction as the kernel reads it.
type SigAction struct {
	Handler, Flags, Restorer, Mask uint64
}

// Sigaction is rt_sigaction(sig, &act, &old, 8), with Restorer set as
// libc sets it. It returns the old action.
func (g *Guest) Sigaction(sig unix.Signal, act SigAction) (SigAction, unix.Errno) {
	act.Flags |= saRestorer
	act.Restorer = Restorer
	buf := g.Alloc(64)
	b := make([]byte, 32)
	le := binary.LittleEndian
	le.PutUint64(b[0:], act.Handler)
	le.PutUint64(b[8:], act.Flags)
	le.PutUint64(b[16:], act.Restorer)
	le.PutUint64(b[24:], act.Mask)
	g.Write(buf, b)
	_, errno := g.Call(unix.SYS_RT_SIGACTION, uintptr(sig), buf, buf+32, 8)
	g.Read(buf+32, b)
	return SigAction{le.Uint64(b[0:]), le.Uint64(b[8:]), le.Uint64(b[16:]), le.Uint64(b[24:])}, errno
}

// futexWait is FUTEX_WAIT, which x/sys/unix does not define.
const futexWait = 0

// saRestorer is SA_RESTORER, which libc always sets.
const saRestorer = 0x04000000

// callAt is Call with the instruction's site chosen by the caller.
func (g *Guest) callAt(site uint64, nr uintptr, args ...uintptr) (uintptr, unix.Errno) {
	return decode(g.syscallAt(site, nr, args...))
}
