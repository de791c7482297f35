package confine

import (
	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/internal/seccomp"
)

// GoferCalls is the gofer's allowlist: the Go runtime's calls, the *at
// family on descriptors it holds (it resolves every name one component at a
// time from a directory it holds, never a path from the root), and its
// sockets to the sentry. It executes nothing and makes no socket.
var GoferCalls = Allowlist{
	call(unix.SYS_MMAP, "mmap", "the Go heap", "no PROT_EXEC", noExec(2)),
	call(unix.SYS_MUNMAP, "munmap", "the Go heap", ""),
	call(unix.SYS_MPROTECT, "mprotect", "the Go runtime's guard pages", "no PROT_EXEC", noExec(2)),
	call(unix.SYS_MADVISE, "madvise", "the Go heap returns memory to the host", ""),
	call(unix.SYS_CLONE, "clone", "new threads of the Go runtime", "exactly a thread's flags",
		seccomp.Allow(seccomp.Eq(0, goThreadFlags))),
	call(unix.SYS_EXIT, "exit", "a Go thread ends", ""),
	call(unix.SYS_EXIT_GROUP, "exit_group", "the gofer ends", ""),
	call(unix.SYS_FUTEX, "futex", "Go's locks and sleeps", ""),
	call(unix.SYS_SCHED_YIELD, "sched_yield", "the Go scheduler", ""),
	call(unix.SYS_NANOSLEEP, "nanosleep", "the Go runtime's short sleeps", ""),
	call(unix.SYS_CLOCK_GETTIME, "clock_gettime", "the clocks, where the vDSO does not serve them", ""),
	call(unix.SYS_GETTID, "gettid", "the Go runtime's thread ids", ""),
	call(unix.SYS_GETPID, "getpid", "the Go runtime signals itself", ""),
	call(unix.SYS_TGKILL, "tgkill", "Go's preemption of its threads; the pid namespace holds only the gofer", ""),
	call(unix.SYS_RT_SIGACTION, "rt_sigaction", "the Go runtime's signal handlers", ""),
	call(unix.SYS_RT_SIGPROCMASK, "rt_sigprocmask", "the Go runtime's signal masks", ""),
	call(unix.SYS_RT_SIGRETURN, "rt_sigreturn", "return from a signal handler", ""),
	call(unix.SYS_SIGALTSTACK, "sigaltstack", "each Go thread's signal stack", ""),
	call(unix.SYS_RESTART_SYSCALL, "restart_syscall", "a sleep interrupted by a signal resumes", ""),

	call(unix.SYS_SENDMSG, "sendmsg", "answers to the sentry, with the descriptors it opened", ""),
	call(unix.SYS_RECVMSG, "recvmsg", "the sentry's requests", ""),
	call(unix.SYS_SHUTDOWN, "shutdown", "the end of a session", ""),
	call(unix.SYS_GETSOCKOPT, "getsockopt", "the check that a session's socket is SOCK_SEQPACKET", "SOL_SOCKET, SO_TYPE",
		seccomp.Allow(seccomp.Eq(1, unix.SOL_SOCKET), seccomp.Eq(2, unix.SO_TYPE))),
	call(unix.SYS_CLOSE, "close", "descriptors it is done with", ""),
	call(unix.SYS_DUP, "dup", "a node's descriptor, kept apart from the one handed over", ""),
	call(unix.SYS_FCNTL, "fcntl", "descriptor flags", "F_GETFD, F_SETFD, F_GETFL, F_SETFL",
		oneOf(1, unix.F_GETFD, unix.F_SETFD, unix.F_GETFL, unix.F_SETFL)...),
	call(unix.SYS_LSEEK, "lseek", "a directory read from its start again", ""),

	call(unix.SYS_OPENAT2, "openat2", "each walk of one name, beneath a directory it holds, following no link", ""),
	call(unix.SYS_OPENAT, "openat", "a bind-mounted single file, by its path in the gofer's own root", ""),
	call(unix.SYS_FSTAT, "fstat", "attributes of a node", ""),
	call(unix.SYS_NEWFSTATAT, "newfstatat", "attributes of a node (AT_EMPTY_PATH)", ""),
	call(unix.SYS_GETDENTS64, "getdents64", "directory listings", ""),
	call(unix.SYS_READLINKAT, "readlinkat", "a symlink's target, for the sentry to resolve", ""),
	call(unix.SYS_FSTATFS, "fstatfs", "statfs of a tree", ""),
	call(unix.SYS_MKDIRAT, "mkdirat", "mkdir", ""),
	call(unix.SYS_MKNODAT, "mknodat", "mkfifo and socket nodes", "no device nodes",
		seccomp.Allow(seccomp.MaskedEq(2, unix.S_IFMT, unix.S_IFIFO)), seccomp.Allow(seccomp.MaskedEq(2, unix.S_IFMT, unix.S_IFSOCK))),
	call(unix.SYS_SYMLINKAT, "symlinkat", "symlink", ""),
	call(unix.SYS_LINKAT, "linkat", "link", ""),
	call(unix.SYS_UNLINKAT, "unlinkat", "unlink and rmdir", ""),
	call(unix.SYS_RENAMEAT2, "renameat2", "rename", ""),
	call(unix.SYS_FCHOWNAT, "fchownat", "the owner the sentry names", ""),
	call(unix.SYS_FCHMODAT, "fchmodat", "the mode the sentry names", ""),
	call(unix.SYS_FCHMODAT2, "fchmodat2", "the mode the sentry names, on a node's descriptor (AT_EMPTY_PATH)", ""),
	call(unix.SYS_UTIMENSAT, "utimensat", "file times", ""),
	call(unix.SYS_FTRUNCATE, "ftruncate", "truncate and O_TRUNC", ""),
	call(unix.SYS_FGETXATTR, "fgetxattr", "extended attributes", ""),
	call(unix.SYS_FSETXATTR, "fsetxattr", "extended attributes", ""),
	call(unix.SYS_FLISTXATTR, "flistxattr", "extended attributes", ""),
	call(unix.SYS_FREMOVEXATTR, "fremovexattr", "extended attributes", ""),
}
