package kernel

import (
	"math/rand/v2"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"
)

// kcmp(2): whether two tasks share a kernel resource, and an order among
// resources of a kind that reveals nothing of where they are: Linux
// compares (pointer XOR cookie) * odd cookie, with random cookies per
// kind made at boot. The sentry's objects do not move (Go's collector does
// not move them), so their addresses serve as Linux's pointers do.

// Kcmp types (<linux/kcmp.h>).
const (
	KcmpFile = iota
	KcmpVM
	KcmpFiles
	KcmpFS
	KcmpSighand
	KcmpIO
	KcmpSysvsem
	KcmpEpollTFD
	kcmpTypes
)

type kcmpCookies struct {
	once sync.Once
	c    [kcmpTypes][2]uint64
}

// KcmpOrder is kcmp's answer for objects a and b of kind typ: 0 if they
// are one, else 1 if a comes first, 2 if b does.
func (k *Kernel) KcmpOrder(typ int, a, b uintptr) uintptr {
	kc := &k.kcmp
	kc.once.Do(func() {
		for i := range kc.c {
			kc.c[i] = [2]uint64{rand.Uint64(), rand.Uint64() | 1}
		}
	})
	c := kc.c[typ]
	x, y := int64((uint64(a)^c[0])*c[1]), int64((uint64(b)^c[0])*c[1])
	switch {
	case x < y:
		return 1
	case x > y:
		return 2
	}
	return 0
}

// KcmpTasks finds the two tasks kcmp compares: ESRCH if either is not
// there, EPERM if the caller may not read both (PTRACE_MODE_READ with real
// ids).
func (t *Task) KcmpTasks(tid1, tid2 int32) (*Task, *Task, error) {
	t1, t2 := t.LookupTask(tid1), t.LookupTask(tid2)
	if t1 == nil || t2 == nil {
		return nil, nil, unix.ESRCH
	}
	if !t.MayPtrace(t1, PtraceReadRealCreds) || !t.MayPtrace(t2, PtraceReadRealCreds) {
		return nil, nil, unix.EPERM
	}
	return t1, t2, nil
}

// KcmpResource is the identity of the task's resource of kind typ (one of
// the kinds that name no file): its address space, descriptor table,
// file-system context, signal handlers, I/O context or System V
// semaphore undo list. No task has an I/O context (Linux makes one for a
// task's first block I/O or ioprio_set; the sandbox has no block devices):
// they compare equal, as two tasks without one do on Linux.
func (t *Task) KcmpResource(typ int) uintptr {
	switch typ {
	case KcmpVM:
		return uintptr(unsafe.Pointer(t.mm))
	case KcmpFiles:
		return uintptr(unsafe.Pointer(t.fds))
	case KcmpFS:
		return uintptr(unsafe.Pointer(t.fs))
	case KcmpSighand:
		t.tg.mu.Lock()
		defer t.tg.mu.Unlock()
		return uintptr(unsafe.Pointer(t.tg.sighand))
	case KcmpSysvsem:
		return uintptr(unsafe.Pointer(t.semUndo))
	}
	return 0
}
