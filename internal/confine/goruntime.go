package confine

import (
	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/internal/seccomp"
)

// goRuntimeCalls are what the Go runtime of a confined helper process
// (the gofer, moat usernet) calls on its own: memory, threads, locks,
// signals and clocks. The sentry's list names the same calls with its own
// reasons (the stubs share some of them).
var goRuntimeCalls = Allowlist{
	call(unix.SYS_MMAP, "mmap", "the Go heap", "no PROT_EXEC", noExec(2)),
	call(unix.SYS_MUNMAP, "munmap", "the Go heap", ""),
	call(unix.SYS_MPROTECT, "mprotect", "the Go runtime's guard pages", "no PROT_EXEC", noExec(2)),
	call(unix.SYS_MADVISE, "madvise", "the Go heap returns memory to the host", ""),
	call(unix.SYS_CLONE, "clone", "new threads of the Go runtime", "exactly a thread's flags",
		seccomp.Allow(seccomp.Eq(0, goThreadFlags))),
	call(unix.SYS_EXIT, "exit", "a Go thread ends", ""),
	call(unix.SYS_EXIT_GROUP, "exit_group", "the process ends", ""),
	call(unix.SYS_FUTEX, "futex", "Go's locks and sleeps", ""),
	call(unix.SYS_SCHED_YIELD, "sched_yield", "the Go scheduler", ""),
	call(unix.SYS_NANOSLEEP, "nanosleep", "the Go runtime's short sleeps", ""),
	call(unix.SYS_CLOCK_GETTIME, "clock_gettime", "the clocks, where the vDSO does not serve them", ""),
	call(unix.SYS_GETTID, "gettid", "the Go runtime's thread ids", ""),
	call(unix.SYS_GETPID, "getpid", "the Go runtime signals itself", ""),
	call(unix.SYS_TGKILL, "tgkill", "Go's preemption of its threads; its pid namespace holds only itself", ""),
	call(unix.SYS_RT_SIGACTION, "rt_sigaction", "the Go runtime's signal handlers", ""),
	call(unix.SYS_RT_SIGPROCMASK, "rt_sigprocmask", "the Go runtime's signal masks", ""),
	call(unix.SYS_RT_SIGRETURN, "rt_sigreturn", "return from a signal handler", ""),
	call(unix.SYS_SIGALTSTACK, "sigaltstack", "each Go thread's signal stack", ""),
	call(unix.SYS_RESTART_SYSCALL, "restart_syscall", "a sleep interrupted by a signal resumes", ""),
}
