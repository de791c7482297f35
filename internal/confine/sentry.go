package confine

import (
	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/internal/seccomp"
)

// goThreadFlags are the clone flags of the Go runtime's new threads: the
// only clone the sentry makes once confined (its stubs are cloned by the
// source stub, which it forked before).
const goThreadFlags = unix.CLONE_VM | unix.CLONE_FS | unix.CLONE_FILES | unix.CLONE_SIGHAND |
	unix.CLONE_SYSVSEM | unix.CLONE_THREAD | unix.CLONE_SETTLS

// SentryCalls is the sentry's allowlist. It opens no file, makes no socket
// and executes nothing: what it reaches of the host comes to it as file
// descriptors (the gofer's, the guest's stdio, its control socket).
var SentryCalls = Allowlist{
	// Its own memory, threads and scheduling: the Go runtime's.
	call(unix.SYS_MMAP, "mmap", "the Go heap; the memory and control files, mapped shared; image files the gofer opened, read-only", "no PROT_EXEC", noExec(2)),
	call(unix.SYS_MUNMAP, "munmap", "the Go heap; mappings of host files' pages", ""),
	call(unix.SYS_MPROTECT, "mprotect", "the Go runtime's guard pages", "no PROT_EXEC", noExec(2)),
	call(unix.SYS_MADVISE, "madvise", "the Go heap returns memory to the host", ""),
	call(unix.SYS_MINCORE, "mincore", "which freed pages of the memory file are in memory, to clear them in place", ""),
	call(unix.SYS_CLONE, "clone", "new threads of the Go runtime", "exactly a thread's flags",
		seccomp.Allow(seccomp.Eq(0, goThreadFlags))),
	call(unix.SYS_EXIT, "exit", "a Go thread ends", ""),
	call(unix.SYS_EXIT_GROUP, "exit_group", "the sentry ends, with the guest's status", ""),
	call(unix.SYS_FUTEX, "futex", "Go's locks and sleeps; hand-offs with stub threads in the control file", ""),
	call(unix.SYS_SCHED_YIELD, "sched_yield", "spinning waits for a stub give up the CPU", ""),
	call(unix.SYS_NANOSLEEP, "nanosleep", "the Go runtime's short sleeps", ""),
	call(unix.SYS_CLOCK_GETTIME, "clock_gettime", "the clocks, where the vDSO does not serve them", ""),
	call(unix.SYS_GETTID, "gettid", "the Go runtime's thread ids", ""),
	call(unix.SYS_GETPID, "getpid", "the Go runtime signals itself", ""),
	call(unix.SYS_TGKILL, "tgkill", "Go's preemption of its threads; the sentry's kick of a running stub thread (SIGUSR2); the pid namespace holds only the sandbox", ""),
	call(unix.SYS_KILL, "kill", "ending a stub; the pid namespace holds only the sandbox", ""),
	call(unix.SYS_WAIT4, "wait4", "reaping dead stubs", ""),
	call(unix.SYS_SETPRIORITY, "setpriority", "guest threads run at nice 5, below the sentry", ""),
	call(unix.SYS_SCHED_GETAFFINITY, "sched_getaffinity", "the CPUs the guest sees", "its own (pid 0)", seccomp.Allow(seccomp.Eq(0, 0))),
	call(unix.SYS_RT_SIGACTION, "rt_sigaction", "the Go runtime's signal handlers", ""),
	call(unix.SYS_RT_SIGPROCMASK, "rt_sigprocmask", "the Go runtime's signal masks", ""),
	call(unix.SYS_RT_SIGRETURN, "rt_sigreturn", "return from a signal handler", ""),
	call(unix.SYS_SIGALTSTACK, "sigaltstack", "each Go thread's signal stack", ""),
	call(unix.SYS_RESTART_SYSCALL, "restart_syscall", "a sleep interrupted by a signal resumes", ""),
	call(unix.SYS_GETRANDOM, "getrandom", "AT_RANDOM, /dev/urandom and getrandom for the guest", ""),
	call(unix.SYS_SYSINFO, "sysinfo", "memory figures for tmpfs sizes, /proc/meminfo and sysinfo", ""),
	call(unix.SYS_UNAME, "uname", "the host's node name, which a config without a hostname gets", ""),

	// The descriptors it holds.
	call(unix.SYS_READ, "read", "the setup and control sockets, the guest's stdio, the host terminal, a kept sandbox's state", ""),
	call(unix.SYS_WRITE, "write", "the log, the guest's stdio, the control sockets, a kept sandbox's state", ""),
	call(unix.SYS_READV, "readv", "the guest's stdio", ""),
	call(unix.SYS_WRITEV, "writev", "the guest's stdio", ""),
	call(unix.SYS_PREAD64, "pread64", "image files and bind-mounted files the gofer opened", ""),
	call(unix.SYS_PWRITE64, "pwrite64", "bind-mounted files the gofer opened", ""),
	call(unix.SYS_PREADV, "preadv", "a stdio file at its offset", ""),
	call(unix.SYS_PWRITEV, "pwritev", "a stdio file at its offset", ""),
	call(unix.SYS_LSEEK, "lseek", "a stdio file's offset, which the container's caller shares", ""),
	call(unix.SYS_FSTAT, "fstat", "the type and size of a descriptor it was given", ""),
	call(unix.SYS_FSYNC, "fsync", "a guest's fsync of a bind-mounted file", ""),
	call(unix.SYS_FSTATFS, "fstatfs", "statfs of a bind mount, on a descriptor the gofer opened", ""),
	call(unix.SYS_FALLOCATE, "fallocate", "punching freed pages out of the memory and control files", ""),
	call(unix.SYS_CLOSE, "close", "descriptors it is done with", ""),
	call(unix.SYS_FCNTL, "fcntl", "descriptor flags: non-blocking I/O for Go's poller, copies of stdio",
		"F_GETFD, F_SETFD, F_GETFL, F_SETFL, F_DUPFD_CLOEXEC",
		oneOf(1, unix.F_GETFD, unix.F_SETFD, unix.F_GETFL, unix.F_SETFL, unix.F_DUPFD_CLOEXEC)...),
	call(unix.SYS_IOCTL, "ioctl", "the host terminal's settings and size (console and stdio)",
		"TCGETS, TCSETS, TCSETSW, TCSETSF, TIOCGWINSZ, TIOCSWINSZ (never TIOCSTI)",
		oneOf(1, unix.TCGETS, unix.TCSETS, unix.TCSETSW, unix.TCSETSF, unix.TIOCGWINSZ, unix.TIOCSWINSZ)...),
	call(unix.SYS_EPOLL_PWAIT, "epoll_pwait", "Go's poller: the control socket, the host terminal", ""),
	call(unix.SYS_EPOLL_CTL, "epoll_ctl", "Go's poller", ""),
	call(unix.SYS_PPOLL, "ppoll", "the console's copier waits for the host terminal; netstack waits for frames on a link's packet socket", ""),
	call(unix.SYS_EVENTFD2, "eventfd2", "the console's copier is told to stop", ""),
	call(unix.SYS_SENDMSG, "sendmsg", "requests to the gofer", ""),
	call(unix.SYS_RECVMSG, "recvmsg", "the gofer's answers, with the descriptors it opened", ""),
	call(unix.SYS_ACCEPT4, "accept4", "control requests (start, kill) on the listening socket it was given", ""),
	call(unix.SYS_GETSOCKNAME, "getsockname", "Go's net package names an accepted control connection", ""),
	call(unix.SYS_SHUTDOWN, "shutdown", "the end of a control exchange", ""),
	call(unix.SYS_RECVMMSG, "recvmmsg", "netstack reads Ethernet frames from a link's packet socket, which the CLI opened in the joined network namespace", ""),
	call(unix.SYS_SENDMMSG, "sendmmsg", "netstack writes Ethernet frames to a link's packet socket", ""),
	call(unix.SYS_SETSOCKOPT, "setsockopt", "netstack puts a link's packet socket in a fanout group", "SOL_PACKET, PACKET_FANOUT",
		seccomp.Allow(seccomp.Eq(1, unix.SOL_PACKET), seccomp.Eq(2, unix.PACKET_FANOUT))),
	call(unix.SYS_GETSOCKOPT, "getsockopt", "netstack reads the fanout group it joined", "SOL_PACKET, PACKET_FANOUT",
		seccomp.Allow(seccomp.Eq(1, unix.SOL_PACKET), seccomp.Eq(2, unix.PACKET_FANOUT))),
}
