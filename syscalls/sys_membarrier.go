package syscalls

import (
	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/sentry/arch"
	"github.com/moat-sandbox/moat/sentry/kernel"
)

// membarrier(2) commands, Linux's <linux/membarrier.h>.
const (
	membarrierQuery                            = 0
	membarrierGlobal                           = 1 << 0
	membarrierGlobalExpedited                  = 1 << 1
	membarrierRegisterGlobalExpedited          = 1 << 2
	membarrierPrivateExpedited                 = 1 << 3
	membarrierRegisterPrivateExpedited         = 1 << 4
	membarrierPrivateExpeditedSyncCore         = 1 << 5
	membarrierRegisterPrivateExpeditedSyncCore = 1 << 6
	membarrierGetRegistrations                 = 1 << 9

	// membarrierSupported is what MEMBARRIER_CMD_QUERY answers: every
	// command but the restartable-sequence ones, which a kernel without
	// rseq (as moat is) does not have.
	membarrierSupported = membarrierGlobal | membarrierGlobalExpedited | membarrierRegisterGlobalExpedited |
		membarrierPrivateExpedited | membarrierRegisterPrivateExpedited |
		membarrierPrivateExpeditedSyncCore | membarrierRegisterPrivateExpeditedSyncCore |
		membarrierGetRegistrations
)

// Membarrier implements Linux syscall membarrier(2). The barriers are
// real: the threads running guest code are made to leave it
// (kernel.Task.Membarrier says why that is a full barrier and a core
// serialisation). The global commands reach every thread of the sandbox,
// which is the system a guest sees.
func Membarrier(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	cmd, flags := a.Int(0), a.Uint(1)
	if flags != 0 {
		// MEMBARRIER_CMD_FLAG_CPU is for the rseq command alone.
		return 0, unix.EINVAL
	}
	m := t.MM()
	switch cmd {
	case membarrierQuery:
		return membarrierSupported, nil
	case membarrierGetRegistrations:
		return uintptr(m.MembarrierRegistered()), nil
	case membarrierGlobal:
		t.Membarrier(true)
	case membarrierGlobalExpedited:
		// Every registered process: no more than the whole sandbox.
		t.Membarrier(true)
	case membarrierRegisterGlobalExpedited, membarrierRegisterPrivateExpedited,
		membarrierRegisterPrivateExpeditedSyncCore:
		m.MembarrierRegister(uint32(cmd))
	case membarrierPrivateExpedited, membarrierPrivateExpeditedSyncCore:
		// Each command's registration is the bit after it.
		if m.MembarrierRegistered()&uint32(cmd<<1) == 0 {
			return 0, unix.EPERM
		}
		t.Membarrier(false)
	default:
		return 0, unix.EINVAL
	}
	return 0, nil
}
