// Package linuxabi holds the Linux ABI constants that golang.org/x/sys/unix
// does not define (or defines with the C library's value rather than the
// kernel's), each with the Linux header or source file it comes from, for
// the sentry and its system call table. Everything that unix defines is
// taken from unix instead: this package must never repeat it.
//
// Names are Linux's, so that each can be found in the header it names.
package linuxabi

import (
	"math"

	"golang.org/x/sys/unix"
)

// Generic ioctl requests: include/uapi/asm-generic/ioctls.h.
const (
	FIONREAD = 0x541b
	FIONBIO  = 0x5421
	FIONCLEX = 0x5450
	FIOCLEX  = 0x5451
	FIOASYNC = 0x5452
	FIOQSIZE = 0x5460
)

// LANDLOCK_RULE_NET_PORT is landlock_add_rule's TCP port rule type
// (include/uapi/linux/landlock.h, Linux 6.7).
const LANDLOCK_RULE_NET_PORT = 2

// File-system ioctl requests: include/uapi/linux/fs.h and fiemap.h
// (FS_IOC_GETFSUUID and FS_IOC_GETFSSYSFSPATH since Linux 6.8: _IOR(0x15,
// 0, struct fsuuid2), 17 bytes, and _IOR(0x15, 1, struct fs_sysfs_path),
// 129 bytes).
const (
	FIGETBSZ              = 0x2
	FIFREEZE              = 0xc0045877
	FITHAW                = 0xc0045878
	FS_IOC_FIEMAP         = 0xc020660b
	FS_IOC_GETFSUUID      = 0x80111500
	FS_IOC_GETFSSYSFSPATH = 0x80811501
)

// futex(2) operations and flags, and the robust-list bits:
// include/uapi/linux/futex.h.
const (
	FUTEX_WAIT             = 0
	FUTEX_WAKE             = 1
	FUTEX_REQUEUE          = 3
	FUTEX_CMP_REQUEUE      = 4
	FUTEX_WAKE_OP          = 5
	FUTEX_WAIT_BITSET      = 9
	FUTEX_WAKE_BITSET      = 10
	FUTEX_PRIVATE_FLAG     = 128
	FUTEX_CLOCK_REALTIME   = 256
	FUTEX_BITSET_MATCH_ANY = 0xffffffff

	FUTEX_WAITERS     = 0x80000000
	FUTEX_OWNER_DIED  = 0x40000000
	FUTEX_TID_MASK    = 0x3fffffff
	ROBUST_LIST_LIMIT = 2048

	// SizeofRobustListHead is sizeof(struct robust_list_head): next,
	// futex_offset, list_op_pending.
	SizeofRobustListHead = 24
)

// arch_prctl(2) codes: arch/x86/include/uapi/asm/prctl.h.
const (
	ARCH_SET_GS    = 0x1001
	ARCH_SET_FS    = 0x1002
	ARCH_GET_FS    = 0x1003
	ARCH_GET_GS    = 0x1004
	ARCH_GET_CPUID = 0x1011
	ARCH_SET_CPUID = 0x1012
)

// Signals.
const (
	// NSIG is _NSIG, the highest signal number (SIGRTMAX) on x86-64:
	// arch/x86/include/asm/signal.h.
	NSIG = 64
	// SizeofSigset is the kernel's sizeof(sigset_t), NSIG bits; the only
	// sigset size its system calls accept (unix.Sigset_t is the C
	// library's, 1024 bits).
	SizeofSigset = NSIG / 8

	// Handler values: include/uapi/asm-generic/signal-defs.h.
	SIG_DFL = 0
	SIG_IGN = 1

	// sa_flags: include/uapi/asm-generic/signal-defs.h, and SA_RESTORER
	// from arch/x86/include/uapi/asm/signal.h.
	SA_NOCLDSTOP = 0x00000001
	SA_NOCLDWAIT = 0x00000002
	SA_SIGINFO   = 0x00000004
	SA_RESTORER  = 0x04000000
	SA_ONSTACK   = 0x08000000
	SA_RESTART   = 0x10000000
	SA_NODEFER   = 0x40000000
	SA_RESETHAND = 0x80000000

	// sigaltstack(2): include/uapi/linux/signal.h, and MINSIGSTKSZ from
	// arch/x86/include/uapi/asm/signal.h.
	SS_ONSTACK    = 1
	SS_DISABLE    = 2
	SS_AUTODISARM = 1 << 31
	MINSIGSTKSZ   = 2048

	// si_code values: include/uapi/asm-generic/siginfo.h.
	SI_USER       = 0
	SI_KERNEL     = 0x80
	SI_QUEUE      = -1
	SI_TIMER      = -2
	SI_TKILL      = -6
	CLD_EXITED    = 1
	CLD_KILLED    = 2
	CLD_DUMPED    = 3
	CLD_STOPPED   = 5
	CLD_CONTINUED = 6
	// SIGSYS's si_code for a seccomp SECCOMP_RET_TRAP: siginfo.h calls it
	// SYS_SECCOMP, which in Go names the system call's number.
	SIGSYS_SECCOMP = 1
	// SIGSYS_USER_DISPATCH is a call syscall user dispatch took (SYS_USER_DISPATCH).
	SIGSYS_USER_DISPATCH = 2
)

// MAX_ERRNO is the largest errno a system call returns, and the cap on a
// seccomp SECCOMP_RET_ERRNO's: include/linux/err.h.
const MAX_ERRNO = 4095

// SizeofSeccompNotif, SizeofSeccompNotifResp and SizeofSeccompData are
// what SECCOMP_GET_NOTIF_SIZES reports: the sizes of struct seccomp_notif,
// seccomp_notif_resp and seccomp_data (include/uapi/linux/seccomp.h).
const (
	SizeofSeccompNotif     = 80
	SizeofSeccompNotifResp = 24
	SizeofSeccompData      = 64
)

// O_LARGEFILE is the kernel's flag (include/uapi/asm-generic/fcntl.h),
// which F_GETFL reports on x86-64 for files that are always opened large;
// unix.O_LARGEFILE is the C library's 0.
const O_LARGEFILE = 0o100000

// Extended attribute limits: include/uapi/linux/limits.h.
const (
	XATTR_NAME_MAX = 255
	XATTR_SIZE_MAX = 65536
	XATTR_LIST_MAX = 65536
)

// Limits of the kernel's own, visible to programs.
const (
	// UIO_MAXIOV is the most iovecs one call takes:
	// include/uapi/linux/uio.h.
	UIO_MAXIOV = 1024
	// MAX_RW_COUNT is the most one read or write moves, INT_MAX rounded
	// down to a page: include/linux/fs.h.
	MAX_RW_COUNT = math.MaxInt32 &^ (4096 - 1)
	// TASK_SIZE_MAX is the end of the user address space with 4-level
	// paging, where access_ok stops: arch/x86/include/asm/page_64_types.h.
	TASK_SIZE_MAX = 1<<47 - 4096
	// TASK_COMM_LEN is the size of a task's name with its NUL:
	// include/linux/sched.h.
	TASK_COMM_LEN = 16
	// MFD_NAME_MAX_LEN is the longest memfd_create name, NAME_MAX less
	// the "memfd:" prefix: mm/memfd.c.
	MFD_NAME_MAX_LEN = unix.NAME_MAX - len("memfd:")
	// EP_MAX_EVENTS is the most events one epoll_wait returns, INT_MAX
	// over sizeof(struct epoll_event) (12 on x86-64): fs/eventpoll.c.
	EP_MAX_EVENTS = math.MaxInt32 / 12
	// USER_HZ is the clock tick of times(2) and /proc:
	// include/asm-generic/param.h.
	USER_HZ = 100
	// DEFAULT_TIMER_SLACK_NS is a task's timer slack until it sets one
	// (PR_GET_TIMERSLACK): init/init_task.c.
	DEFAULT_TIMER_SLACK_NS = 50000
)
