/*
 * fuzz_syscalls: random system calls with random arguments, for
 * TestGuestSyscallFuzz (integration/fuzz_test.go).
 *
 * Run it ONLY inside a moat sandbox. Natively it would fire random calls at
 * the host kernel as root; it refuses to start unless it is pid 1, the init
 * of a sandbox.
 *
 *     fuzz_syscalls SEED COUNT [-d] [-w K]
 *
 * The init forks disposable workers one after another and waits for each.
 * Worker k seeds its generators from SEED and k (so a run is reproducible,
 * up to the interleaving of its threads) and runs two threads that issue
 * random calls, BUDGET between them: numbers 0..450 and a few out of range,
 * arguments drawn from small and huge integers, pointers into a scratch
 * mapping, pointers that fault, pointers that end at a PROT_NONE page, path
 * strings, prepared structures and file descriptors. A worker may die of a
 * signal (it can install a garbage handler and fault, or kill itself): the
 * init counts that and forks the next one. At the end it prints
 * "fuzz: N calls, M children, OK" and exits 0.
 *
 * Besides surviving, a worker checks what it can about each answer without
 * an oracle: an error is an errno Linux has (1..133: ERESTARTSYS and the
 * like must never reach a program), a read-like call returns no more than
 * it was asked for, and one whose buffer cannot be mapped (below 64 KiB,
 * or at and above 0x7ffffffff000) has copied nothing. A wrong answer is
 * reported and makes the run fail.
 *
 * With -d every thread prints each call (before) and its result (after) on
 * stderr, until a call closes its stderr; -w K runs worker K alone. Either
 * way, the last calls of a worker that dies or is killed are printed.
 *
 * What is left out is only what would stop a worker from going on without
 * a bug: exit, execve, rt_sigreturn, pause and rt_sigsuspend, seccomp,
 * reboot, PTRACE_TRACEME (a tracer that never answers), and uretprobe, which kills any caller outside a uretprobe
 * trampoline with SIGILL. fork, vfork, clone and clone3 are made, and the
 * child exits at once without touching memory (a CLONE_VM child gets a
 * stack of its own). Calls that change memory are kept to a region of their
 * own so the worker's code, stacks and counters survive. Calls that name a
 * process are kept to the worker itself, except the signal calls, which may
 * also target init (pid 1, 0, -1): Linux ignores a signal its pid
 * namespace's init has no handler for, SIGKILL included, when the sender is
 * inside the namespace, and this init ignores everything it can.
 *
 * A call that blocks is interrupted: ITIMER_REAL ticks every 10 ms, and its
 * SIGALRM handler (installed without SA_RESTART, as is the SIGUSR2 one)
 * sends SIGUSR2 to the other thread. A worker that takes longer than
 * WATCHDOG_S seconds in all is nudged: SIGCONT to every process (a vfork
 * child may be stopped) and a tick. One that still runs 2 s later has hung
 * in the sentry: it is killed, and the run fails.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/ptrace.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

typedef unsigned long u64;

#define BUDGET 2000   /* calls per worker */
#define WATCHDOG_S 5  /* seconds a worker may take */
#define MAXNR 451     /* numbers 0..450 */

/* The scratch region: calls that change memory stay inside it. */
#define REGION 0x300000000000UL
#define REGION_SIZE (64UL << 20)
#define SCR_SIZE (64UL << 10) /* read-write, then a PROT_NONE guard page */
#define GUARD 4096UL
#define SCR_END (REGION + SCR_SIZE)

/* Areas of the scratch mapping. */
#define A_RANDOM 0           /* random bytes */
#define A_PATHS (16 << 10)   /* NUL-terminated paths, 128 bytes each */
#define A_STRUCTS (24 << 10) /* iovecs, timespecs, sigsets, pollfds */
#define A_BUF (28 << 10)     /* zeros, what the iovecs point at */
#define A_LONG (60 << 10)    /* a path with no NUL up to the guard page */

#define STACK_SIZE (64UL << 10)

static u64 raw(long nr, u64 a, u64 b, u64 c, u64 d, u64 e, u64 f)
{
	long ret;
	register u64 r10 __asm__("r10") = d;
	register u64 r8 __asm__("r8") = e;
	register u64 r9 __asm__("r9") = f;
	__asm__ volatile("syscall"
			 : "=a"(ret)
			 : "a"(nr), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8), "r"(r9)
			 : "rcx", "r11", "memory");
	return ret;
}

/* raw_fork is raw for the calls that make a process or thread: the child
 * (rax 0) exits at once, touching neither memory nor its stack. */
static u64 raw_fork(long nr, u64 a, u64 b, u64 c, u64 d, u64 e, u64 f)
{
	long ret;
	register u64 r10 __asm__("r10") = d;
	register u64 r8 __asm__("r8") = e;
	register u64 r9 __asm__("r9") = f;
	__asm__ volatile("syscall\n\t"
			 "test %%rax, %%rax\n\t"
			 "jnz 1f\n\t"
			 "mov $60, %%eax\n\t" /* exit(0): this thread only */
			 "xor %%edi, %%edi\n\t"
			 "syscall\n"
			 "1:"
			 : "=a"(ret)
			 : "a"(nr), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8), "r"(r9)
			 : "rcx", "r11", "memory");
	return ret;
}

/* The workers make no libc call once they fuzz, bar memcpy: a random
 * arch_prctl may have moved a thread's TLS, where libc keeps errno. */
#define sys0(n) raw(n, 0, 0, 0, 0, 0, 0)
#define sys1(n, a) raw(n, (u64)(a), 0, 0, 0, 0, 0)
#define sys2(n, a, b) raw(n, (u64)(a), (u64)(b), 0, 0, 0, 0)
#define sys3(n, a, b, c) raw(n, (u64)(a), (u64)(b), (u64)(c), 0, 0, 0)
#define sys4(n, a, b, c, d) raw(n, (u64)(a), (u64)(b), (u64)(c), (u64)(d), 0, 0)
#define sys6(n, a, b, c, d, e, f) raw(n, (u64)(a), (u64)(b), (u64)(c), (u64)(d), (u64)(e), (u64)(f))

/* What the workers tell init, in a page they share. */
struct shared {
	u64 calls;      /* calls the current worker has started */
	u64 nbad;       /* wrong answers seen, by every worker */
	u64 last[2][7]; /* each thread's last call: number, arguments */
	struct {
		u64 worker, nr, a[6], ret;
	} bad[8];
	/* What each number has answered so far: calls the kernel does not
	 * have are drawn less, once seen to be missing. */
	unsigned char enosys[MAXNR], works[MAXNR];
};

/* A fuzzing thread: its generator and output buffer. */
struct gen {
	u64 rs;
	int t; /* 0 or 1 */
	u64 k; /* the worker */
	u64 budget;
	int debug;
	volatile struct shared *sh;
	char obuf[512];
	int olen;
};

/* xorshift64*, seeded through splitmix64. */
static u64 rnd(struct gen *g)
{
	g->rs ^= g->rs >> 12;
	g->rs ^= g->rs << 25;
	g->rs ^= g->rs >> 27;
	return g->rs * 2685821657736338717UL;
}
static u64 below(struct gen *g, u64 n) { return rnd(g) % n; }
static u64 splitmix(u64 x)
{
	x += 0x9e3779b97f4a7c15UL;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9UL;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebUL;
	return x ^ (x >> 31);
}

/* Output without libc, for the workers. */
static void put(struct gen *g, const char *s)
{
	while (*s && g->olen < (int)sizeof(g->obuf) - 1)
		g->obuf[g->olen++] = *s++;
}
static void puthex(struct gen *g, u64 v)
{
	char b[19];
	int i = 18;
	b[i] = 0;
	do {
		b[--i] = "0123456789abcdef"[v & 15];
		v >>= 4;
	} while (v);
	b[--i] = 'x';
	b[--i] = '0';
	put(g, b + i);
}
static void putdec(struct gen *g, u64 v)
{
	char b[21];
	int i = 20;
	b[i] = 0;
	do {
		b[--i] = '0' + v % 10;
		v /= 10;
	} while (v);
	put(g, b + i);
}
static void flush(struct gen *g)
{
	sys3(SYS_write, 2, g->obuf, g->olen);
	g->olen = 0;
}

static const u64 huge[] = {
	~0UL, 0x7fffffffffffffffUL, 0x8000000000000000UL, 0xffffffffUL, 0x7fffffffUL, 0x80000000UL,
	0x100000000UL, 0xfffffffffffff000UL, 1UL << 47, 1UL << 46, 0x7ffffffff000UL, 4096, 1 << 20,
	0xffffffff80000000UL, 0xfffffffffffffffeUL, 65536, 0x7fffffffffffUL,
};
#define NHUGE (sizeof(huge) / sizeof(huge[0]))
static const u64 badptr[] = {
	0, 1, 8, 4096, 0xffffffffffff0000UL, 0xffff800000000000UL, 0xffffffffff600000UL /* vsyscall */,
	0x800000000000UL /* not canonical */, 0x7ffffffff000UL, 0x7fffffffffffUL, 0x1000000000000000UL,
	REGION + REGION_SIZE - 4096 /* inside the region, never mapped */,
};
#define NBADPTR (sizeof(badptr) / sizeof(badptr[0]))
static const char *paths[] = {
	"/", "/tmp", "/tmp/fz", "/tmp/fz/a", "/tmp/fzf", "/tmp/fzl", "/dev/null", "/dev/zero", "/dev/full",
	"/dev/urandom", "/proc/self/maps", "/proc/self/status", "/proc/self/fd/3", "/proc/self/exe",
	"/proc/self", "/proc/self/mem", "/etc/passwd", "/bin/busybox", "/bin/sh", "", ".", "..", "tmp",
	"/tmp/../../..", "/proc", "/dev", "/nonexistent/x", "/etc/passwd/x", "/dev/tty", "/proc/sys/kernel/hostname",
	"fz", "/tmp/fz/../fzf",
};
#define NPATHS (sizeof(paths) / sizeof(paths[0]))

/* The worker's state, set before its threads fuzz and read-only after. */
static int fds[32];
static int nfds;
static u64 curbrk;
static int self;
static int tids[2];
static u64 kidstack; /* top of the stack CLONE_VM children get */

static char *scr(u64 off) { return (char *)(REGION + off); }

/* fill_scratch maps the scratch mapping and its guard page afresh (a call
 * may have unmapped, moved or protected them) and fills it. */
static void fill_scratch(struct gen *g)
{
	sys2(SYS_munmap, REGION, REGION_SIZE);
	sys6(SYS_mmap, REGION, SCR_SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
	sys6(SYS_mmap, SCR_END, GUARD, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
	if ((long)sys4(SYS_mincore, REGION, SCR_SIZE, scr(A_BUF), 0) < 0)
		return; /* the other thread unmapped it already */
	for (u64 *p = (u64 *)scr(A_RANDOM); p < (u64 *)scr(A_PATHS); p++)
		*p = rnd(g);
	for (unsigned i = 0; i < NPATHS; i++) {
		char *d = scr(A_PATHS + 128 * i);
		for (const char *s = paths[i]; *s; s++)
			*d++ = *s;
	}
	/* 16 iovecs into the buffer area, small lengths, a few empty. */
	u64 *iov = (u64 *)scr(A_STRUCTS);
	for (int i = 0; i < 16; i++) {
		iov[2 * i] = REGION + A_BUF + below(g, SCR_SIZE - A_BUF - 4096);
		iov[2 * i + 1] = below(g, 4) ? below(g, 512) : 0;
	}
	/* Timespecs and timevals: zero, short, one second, invalid. */
	static const long ts[] = {0, 0, 0, 1000000, 1, 0, 0, 999999999, -1, 0, 0, 1000000000, 0, 1};
	memcpy(scr(A_STRUCTS + 256), ts, sizeof(ts));
	/* Sigsets: empty, full, SIGALRM only. */
	u64 *ss = (u64 *)scr(A_STRUCTS + 384);
	ss[0] = 0, ss[1] = ~0UL, ss[2] = 1UL << (SIGALRM - 1);
	/* pollfds and epoll_events on the worker's files. */
	int *pfd = (int *)scr(A_STRUCTS + 512);
	for (int i = 0; i < 8; i++) {
		pfd[2 * i] = nfds ? fds[below(g, nfds)] : i;
		pfd[2 * i + 1] = below(g, 2) ? 1 | 4 : (int)rnd(g); /* POLLIN|POLLOUT, or anything */
	}
	/* rlimits, itimervals, sigactions: plausible values and garbage. */
	u64 *st = (u64 *)scr(A_STRUCTS + 640);
	for (int i = 0; i < 48; i++)
		st[i] = below(g, 2) ? below(g, 64) : rnd(g);
	char *lp = scr(A_LONG);
	for (u64 i = 0; i < SCR_SIZE - A_LONG; i++)
		lp[i] = i % 8 == 7 ? '/' : 'a';
}

/* A size for a memory call: mostly within the scratch region, sometimes up
 * to 16 MiB, sometimes absurd. Never tens of GiB that would succeed: the
 * worker may mlock what it maps. */
static u64 msize(struct gen *g)
{
	switch (below(g, 10)) {
	case 0:
		return huge[below(g, NHUGE)] | (1UL << 47);
	case 1:
	case 2:
		return (1 + below(g, 4096)) * 4096;
	}
	return below(g, SCR_SIZE + 2 * GUARD);
}

/* An address inside the scratch region, usually page-aligned. */
static u64 maddr(struct gen *g)
{
	u64 a = REGION + below(g, 16) * (SCR_SIZE / 16) + below(g, 2) * below(g, SCR_SIZE + GUARD);
	if (below(g, 8))
		a &= ~4095UL;
	return a;
}

static u64 arg(struct gen *g)
{
	u64 r = below(g, 100);
	if (r < 18)
		return below(g, 17);
	if (r < 24)
		return -(1 + below(g, 16));
	if (r < 30)
		return huge[below(g, NHUGE)];
	if (r < 34)
		return rnd(g) >> below(g, 64);
	if (r < 52) {
		u64 p = REGION + below(g, SCR_SIZE);
		return below(g, 4) ? p & ~7UL : p;
	}
	if (r < 58)
		return REGION + A_PATHS + 128 * below(g, NPATHS + 1);
	if (r < 64)
		return REGION + A_STRUCTS + 8 * below(g, 4096 / 8);
	if (r < 69)
		return badptr[below(g, NBADPTR)];
	if (r < 74) {
		static const int back[] = {1, 2, 4, 8, 12, 16, 24, 32, 64, 128, 256, 4096};
		return SCR_END - back[below(g, sizeof(back) / sizeof(back[0]))];
	}
	if (r < 77)
		return REGION + A_LONG + below(g, SCR_SIZE - A_LONG);
	if (r < 90)
		return below(g, 2) || !nfds ? below(g, 21) : (u64)fds[below(g, nfds)];
	switch (below(g, 3)) {
	case 0:
		return 1UL << below(g, 64);
	case 1:
		return (1UL << below(g, 32)) | (1UL << below(g, 32));
	}
	return rnd(g) & rnd(g) & 0xffffffffUL;
}

/* plausible reshapes arguments the way most calls take them, so that
 * half the calls get past their first checks: a file or a path first, then
 * a buffer, then a small size. */
static void plausible(struct gen *g, u64 *a)
{
	if (nfds && below(g, 3))
		a[0] = fds[below(g, nfds)];
	else
		a[0] = REGION + A_PATHS + 128 * below(g, NPATHS);
	switch (below(g, 3)) {
	case 0:
		a[1] = REGION + A_BUF + below(g, 4096);
		break;
	case 1:
		a[1] = REGION + A_PATHS + 128 * below(g, NPATHS);
		break;
	case 2:
		a[1] = REGION + A_STRUCTS + 8 * below(g, 64);
		break;
	}
	if (below(g, 2))
		a[2] = below(g, 2) ? below(g, 4097) : below(g, 64);
}

/* A process for a call that names one: the worker itself or nobody. */
static u64 own_pid(struct gen *g)
{
	static const u64 other[] = {0, 99999, -99999UL};
	return below(g, 2) ? (u64)self : other[below(g, 3)];
}

/* A target for a signal: also init, the process group, everyone. */
static u64 sig_pid(struct gen *g)
{
	static const u64 other[] = {1, 0, -1UL, 99999};
	return below(g, 2) ? (u64)self : other[below(g, 4)];
}

/* A thread of the worker, or a target for sig_pid. */
static u64 sig_tid(struct gen *g) { return below(g, 4) ? (u64)tids[below(g, 2)] : sig_pid(g); }

/* clone flags: a few of the known ones, and sometimes anything. */
static u64 clone_flags(struct gen *g)
{
	static const u64 known[] = {
		CLONE_VM, CLONE_FS, CLONE_FILES, CLONE_SIGHAND, CLONE_PIDFD, CLONE_PTRACE, CLONE_VFORK,
		CLONE_PARENT, CLONE_THREAD, CLONE_NEWNS, CLONE_SYSVSEM, CLONE_SETTLS, CLONE_PARENT_SETTID,
		CLONE_CHILD_CLEARTID, CLONE_UNTRACED, CLONE_CHILD_SETTID, CLONE_NEWPID, CLONE_IO,
		CLONE_VM | CLONE_SIGHAND | CLONE_THREAD, CLONE_VM | CLONE_VFORK,
	};
	u64 f = 0;
	for (int n = below(g, 4); n >= 0; n--)
		f |= known[below(g, sizeof(known) / sizeof(known[0]))];
	if (below(g, 10) == 0)
		f |= rnd(g) & 0xffffffff00UL;
	return f;
}

/* fix_args keeps a call within what a worker may do (see the top of the
 * file); it returns 0 for a call left out. */
static int fix_args(struct gen *g, long nr, u64 *a)
{
	switch (nr) {
	case SYS_rt_sigreturn:
	case SYS_execve:
	case SYS_exit:
	case SYS_exit_group:
	case SYS_execveat:
	case SYS_pause:
	case SYS_rt_sigsuspend:
	case SYS_seccomp:
	case SYS_reboot:
	case 335: /* uretprobe: SIGILL outside a uretprobe trampoline */
		return 0;
	case SYS_clone:
		/* flags | exit signal, stack, parent_tid, child_tid, tls */
		a[0] = clone_flags(g) | (below(g, 2) ? SIGCHLD : below(g, 65));
		if (a[0] & CLONE_VM)
			a[1] = kidstack;
		return 1;
	case SYS_clone3: {
		/* struct clone_args: flags, pidfd, child_tid, parent_tid,
		 * exit_signal, stack, stack_size, tls, set_tid, set_tid_size,
		 * cgroup. */
		u64 *ca = (u64 *)scr(A_STRUCTS + 2048 + 128 * g->t);
		if ((long)sys4(SYS_mincore, (u64)ca & ~4095UL, 4096, scr(A_BUF), 0) < 0)
			return 0; /* not mapped now */
		for (int i = 0; i < 11; i++)
			ca[i] = arg(g);
		ca[0] = clone_flags(g) | (below(g, 8) ? 0 : 1UL << 32 /* CLONE_CLEAR_SIGHAND */);
		ca[4] = below(g, 2) ? SIGCHLD : below(g, 65);
		ca[5] = kidstack - STACK_SIZE, ca[6] = STACK_SIZE;
		ca[8] = 0, ca[9] = 0;
		a[0] = (u64)ca;
		a[1] = below(g, 4) ? 64 + 8 * below(g, 4) : arg(g);
		return 1;
	}
	case SYS_prctl:
		return a[0] != 22; /* PR_SET_SECCOMP */
	case SYS_mmap:
		if (a[3] & (MAP_FIXED | MAP_FIXED_NOREPLACE))
			a[0] = maddr(g);
		a[1] = msize(g);
		return 1;
	case SYS_mremap:
		a[0] = maddr(g), a[1] = msize(g), a[2] = msize(g), a[4] = maddr(g);
		return 1;
	case SYS_mprotect:
	case SYS_munmap:
	case SYS_msync:
	case SYS_mincore:
	case SYS_madvise:
	case SYS_mlock:
	case SYS_munlock:
	case SYS_mlock2:
	case SYS_remap_file_pages:
	case SYS_mbind:
	case SYS_pkey_mprotect:
		a[0] = maddr(g), a[1] = msize(g);
		return 1;
	case SYS_fallocate:
		/* A memfd has no size limit: a length of terabytes is stopped
		 * only by a signal, and a worker may be ignoring the ticks for a
		 * moment. Keep it to what the machine can hold. */
		a[3] &= (256UL << 20) - 1;
		return 1;
	case SYS_shmget:
		/* moat backs every page of a segment when it is attached (and
		 * dumps a core of each mapped page), in time that grows with
		 * the segment: a terabyte takes it minutes. Keep segments to
		 * 256 MiB until attaching maps lazily. */
		a[1] &= (256UL << 20) - 1;
		return 1;
	case SYS_shmat:
		a[1] = below(g, 2) ? 0 : maddr(g);
		return 1;
	case SYS_shmdt:
		a[0] = maddr(g);
		return 1;
	case SYS_brk: {
		static const u64 b[] = {0, ~0UL, 1UL << 47};
		a[0] = below(g, 4) ? curbrk + below(g, 1 << 20) : b[below(g, 3)];
		return 1;
	}
	case SYS_kill:
	case SYS_rt_sigqueueinfo:
		a[0] = sig_pid(g);
		return 1;
	case SYS_tkill:
		a[0] = sig_tid(g);
		return 1;
	case SYS_tgkill:
	case SYS_rt_tgsigqueueinfo:
		a[0] = below(g, 4) ? (u64)self : sig_pid(g), a[1] = sig_tid(g);
		return 1;
	case SYS_ptrace:
		/* PTRACE_TRACEME makes the parent (init, or the worker for its
		 * vfork child) a tracer that never answers: its tracee waits
		 * in a ptrace-stop for good, as on Linux. */
		if ((long)a[0] == PTRACE_TRACEME)
			return 0;
		a[1] = own_pid(g);
		return 1;
	case SYS_prlimit64:
	case SYS_process_vm_readv:
	case SYS_process_vm_writev:
	case SYS_move_pages:
	case SYS_migrate_pages:
	case SYS_sched_setaffinity:
	case SYS_sched_setparam:
	case SYS_sched_setscheduler:
	case SYS_sched_setattr:
	case SYS_pidfd_open:
		a[0] = own_pid(g);
		return 1;
	case SYS_kcmp:
		a[0] = own_pid(g), a[1] = own_pid(g);
		return 1;
	case SYS_ppoll:
		/* A sigmask that blocks the ticks must come with a timeout. */
		if (a[3])
			a[2] = REGION + A_STRUCTS + 256 + 16 * below(g, 3);
		return 1;
	case SYS_pselect6:
		if (a[5])
			a[4] = REGION + A_STRUCTS + 256 + 16 * below(g, 3);
		return 1;
	case SYS_epoll_pwait:
		if (a[4])
			a[3] = below(g, 20);
		return 1;
	case SYS_epoll_pwait2:
		if (a[4])
			a[3] = REGION + A_STRUCTS + 256 + 16 * below(g, 3);
		return 1;
	}
	return 1;
}

/* unmappable reports whether no mapping can hold address p. */
static int unmappable(u64 p) { return p < 0x10000 || p >= 0x7ffffffff000UL; }

/* wrong reports an answer Linux never gives to these arguments. */
static int wrong(long nr, const u64 *a, u64 ret)
{
	long r = (long)ret;
	if (r < 0 && r >= -4095)
		return -r > 133;
	int buf = -1, len = -1; /* which arguments are the buffer and its size */
	switch (nr) {
	case SYS_read:
	case SYS_pread64:
	case SYS_getdents64:
	case SYS_readlink:
		buf = 1, len = 2;
		break;
	case SYS_readlinkat:
		buf = 2, len = 3;
		break;
	case SYS_getrandom:
	case SYS_getcwd:
		buf = 0, len = 1;
		break;
	case SYS_write:
	case SYS_pwrite64:
		len = 2;
		break;
	}
	if (len >= 0 && ret > a[len])
		return 1;
	return buf >= 0 && r > 0 && unmappable(a[buf]);
}

/* The ticks. SIGALRM lands on either thread and interrupts it; its handler
 * passes SIGUSR2 on to the other one. */
static void on_alarm(int sig)
{
	(void)sig;
	int me = sys0(SYS_gettid);
	for (int i = 0; i < 2; i++)
		if (tids[i] && tids[i] != me)
			sys3(SYS_tgkill, self, tids[i], SIGUSR2);
}
static void on_usr2(int sig) { (void)sig; }
__asm__(".text\n"
	"fz_restorer:\n"
	"	mov $15, %eax\n"
	"	syscall\n");
extern void fz_restorer(void);

struct ksigaction {
	void (*handler)(int);
	u64 flags;
	void (*restorer)(void);
	u64 mask;
};
#define SA_RESTORER_ 0x04000000
static const struct ksigaction alarm_act = {on_alarm, SA_RESTORER_, fz_restorer, 0};
static const struct ksigaction usr2_act = {on_usr2, SA_RESTORER_, fz_restorer, 0};
static const u64 empty_set = 0;
static const long tick[4] = {0, 10000, 0, 10000}; /* every 10 ms */

/* The ticks' handlers, timer and mask, put back after a call that may
 * have changed them. */
static void guard_handlers(void)
{
	sys4(SYS_rt_sigaction, SIGALRM, &alarm_act, 0, 8);
	sys4(SYS_rt_sigaction, SIGUSR2, &usr2_act, 0, 8);
}
static void guard_timer(void) { sys3(SYS_setitimer, 0 /* ITIMER_REAL */, tick, 0); }
static void guard_mask(void) { sys4(SYS_rt_sigprocmask, SIG_SETMASK, &empty_set, 0, 8); }

/* open_files gives the worker one file of each kind to point calls at. */
static void open_files(void)
{
	int p[2];
	nfds = 0;
	for (unsigned i = 0; i < NPATHS && nfds < 12; i++) {
		static const int flags[] = {0, 2 /* O_RDWR */, 0x200000 /* O_PATH */, 0x10000 /* O_DIRECTORY */};
		long fd = sys4(SYS_openat, -100, paths[i], flags[i % 4], 0);
		if (fd >= 0)
			fds[nfds++] = fd;
	}
	long fd = sys4(SYS_openat, -100, "/tmp/fzf", 0x40 | 2 /* O_CREAT|O_RDWR */, 0644);
	if (fd >= 0)
		fds[nfds++] = fd;
	if ((long)sys2(SYS_pipe2, p, 0) == 0)
		fds[nfds++] = p[0], fds[nfds++] = p[1];
	static const long ids[] = {SYS_eventfd2, SYS_epoll_create1, SYS_timerfd_create, SYS_memfd_create};
	static const u64 a0[] = {0, 0, 1 /* CLOCK_MONOTONIC */, (u64) "fz"};
	for (int i = 0; i < 4; i++)
		if ((long)(fd = sys2(ids[i], a0[i], 0)) >= 0)
			fds[nfds++] = fd;
	u64 mask = 1UL << (SIGUSR1 - 1);
	if ((long)(fd = sys4(SYS_signalfd4, -1, &mask, 8, 0)) >= 0)
		fds[nfds++] = fd;
}

/* fuzz is one thread's loop, until the worker's budget is spent. */
static void fuzz(struct gen *g)
{
	volatile struct shared *sh = g->sh;
	for (u64 i = 0;; i++) {
		if (g->t == 0 && i % 64 == 63)
			fill_scratch(g);
		long nr;
		u64 a[6];
		for (;;) {
			switch (below(g, 200)) {
			case 0:
				nr = -1;
				break;
			case 1:
				nr = 1000 + below(g, 100);
				break;
			case 2:
				nr = 0x40000000 | below(g, MAXNR); /* x32 */
				break;
			default:
				nr = below(g, MAXNR);
				if (g->sh->enosys[nr] >= 3 && !g->sh->works[nr] && below(g, 10))
					continue; /* missing: draw again, mostly */
			}
			for (int j = 0; j < 6; j++)
				a[j] = arg(g);
			if (below(g, 2))
				plausible(g, a);
			if (fix_args(g, nr, a))
				break;
		}
		if (__atomic_fetch_add(&sh->calls, 1, __ATOMIC_SEQ_CST) >= g->budget)
			break;
		sh->last[g->t][0] = nr;
		for (int j = 0; j < 6; j++)
			sh->last[g->t][j + 1] = a[j];
		if (g->debug) {
			put(g, "w"), putdec(g, g->k), put(g, "."), putdec(g, g->t), put(g, " #"), putdec(g, i);
			put(g, ": "), putdec(g, nr), put(g, "(");
			for (int j = 0; j < 6; j++)
				puthex(g, a[j]), put(g, j < 5 ? ", " : ")\n");
			flush(g);
		}
		int forks = nr == SYS_clone || nr == SYS_clone3 || nr == SYS_fork || nr == SYS_vfork;
		u64 ret = (forks ? raw_fork : raw)(nr, a[0], a[1], a[2], a[3], a[4], a[5]);
		if (g->debug)
			put(g, "  = "), puthex(g, ret), put(g, "\n"), flush(g);
		if (nr >= 0 && nr < MAXNR) {
			if (ret != (u64)-38 /* ENOSYS */)
				sh->works[nr] = 1;
			else if (sh->enosys[nr] < 255)
				sh->enosys[nr]++;
		}
		if (wrong(nr, a, ret)) {
			u64 n = __atomic_fetch_add(&sh->nbad, 1, __ATOMIC_SEQ_CST);
			if (n < 8) {
				sh->bad[n].worker = g->k, sh->bad[n].nr = nr, sh->bad[n].ret = ret;
				for (int j = 0; j < 6; j++)
					sh->bad[n].a[j] = a[j];
			}
		}
		switch (nr) {
		case SYS_rt_sigaction:
			guard_handlers();
			break;
		case SYS_rt_sigprocmask:
			guard_mask();
			break;
		case SYS_alarm:
		case SYS_setitimer:
			guard_timer();
			break;
		}
	}
}

/* The second thread starts here, on its own stack. */
static void thread_main(struct gen *g)
{
	tids[1] = sys0(SYS_gettid);
	guard_mask();
	fuzz(g);
	sys1(SYS_exit, 0);
}

/* spawn starts fn(g) in a new thread of the worker on the stack whose top
 * is top. */
static long spawn(void (*fn)(struct gen *), struct gen *g, u64 top)
{
	u64 *sp = (u64 *)top;
	*--sp = (u64)g;
	*--sp = (u64)fn;
	u64 flags = CLONE_VM | CLONE_FS | CLONE_FILES | CLONE_SIGHAND | CLONE_THREAD | CLONE_SYSVSEM;
	long ret;
	__asm__ volatile("syscall\n\t"
			 "test %%rax, %%rax\n\t"
			 "jnz 1f\n\t"
			 "pop %%rax\n\t"
			 "pop %%rdi\n\t"
			 "call *%%rax\n\t"
			 "ud2\n"
			 "1:"
			 : "=a"(ret)
			 : "a"(SYS_clone), "D"(flags), "S"(sp), "d"(0)
			 : "rcx", "r11", "memory");
	return ret;
}

static struct gen gens[2];

static void worker(u64 seed, u64 k, volatile struct shared *sh, u64 budget, int debug)
{
	/* Signals get their default actions back: init ignores them. */
	for (int s = 1; s < 65; s++) {
		struct ksigaction dfl = {SIG_DFL, 0, 0, 0};
		sys4(SYS_rt_sigaction, s, &dfl, 0, 8);
	}
	for (int t = 0; t < 2; t++) {
		struct gen *g = &gens[t];
		g->rs = splitmix(seed * 0x100000001b3UL + 2 * k + t) | 1;
		g->t = t, g->k = k, g->budget = budget, g->debug = debug, g->sh = sh;
	}
	self = sys0(SYS_getpid);
	tids[0] = self;
	long null = sys4(SYS_openat, -100, "/dev/null", 2, 0);
	for (int fd = 0; fd < 3; fd++)
		if (!debug || fd < 2)
			sys2(SYS_dup2, null, fd);
	sys1(SYS_close, null);
	curbrk = sys1(SYS_brk, 0);
	/* Stacks: the second thread's, and one for CLONE_VM children. */
	u64 stacks = sys6(SYS_mmap, 0, 2 * STACK_SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	kidstack = stacks + 2 * STACK_SIZE;
	fill_scratch(&gens[0]);
	open_files();
	fill_scratch(&gens[0]); /* again, so that pollfds name the files */
	guard_handlers();
	guard_mask();
	guard_timer();
	spawn(thread_main, &gens[1], stacks + STACK_SIZE);
	fuzz(&gens[0]);
	sys1(SYS_exit_group, 0);
}

/* The init's side. */

static volatile int alarmed;
static void on_watchdog(int sig) { (void)sig, alarmed = 1; }

static void print_last(volatile struct shared *sh)
{
	for (int t = 0; t < 2; t++) {
		if (sh->last[t][0] == ~0UL)
			continue;
		fprintf(stderr, "; thread %d's last call: %ld(%#lx, %#lx, %#lx, %#lx, %#lx, %#lx)", t,
			(long)sh->last[t][0], sh->last[t][1], sh->last[t][2], sh->last[t][3], sh->last[t][4],
			sh->last[t][5], sh->last[t][6]);
	}
	fprintf(stderr, "\n");
}

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	if (getpid() != 1) {
		fprintf(stderr, "fuzz_syscalls: not pid 1, so not a sandbox's init: refusing to fire random "
				"system calls at this kernel\n");
		return 2;
	}
	if (argc < 3) {
		fprintf(stderr, "usage: fuzz_syscalls SEED COUNT [-d] [-w K]\n");
		return 2;
	}
	u64 seed = strtoull(argv[1], 0, 0), count = strtoull(argv[2], 0, 0), only = ~0UL;
	int debug = 0;
	for (int i = 3; i < argc; i++) {
		if (strcmp(argv[i], "-d") == 0)
			debug = 1;
		else if (strcmp(argv[i], "-w") == 0 && i + 1 < argc)
			only = strtoull(argv[++i], 0, 0);
	}
	setvbuf(stdout, 0, _IONBF, 0);

	/* Each worker counts its calls here, so a worker that dies is counted. */
	volatile struct shared *sh = mmap(0, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (sh == MAP_FAILED) {
		perror("fuzz_syscalls: mmap");
		return 1;
	}
	/* Init ignores every signal it can, as most inits do; SIGALRM is its
	 * watchdog, installed without SA_RESTART so that waitpid returns. */
	for (int s = 1; s < 65; s++)
		if (s != SIGKILL && s != SIGSTOP && s != SIGCHLD)
			signal(s, SIG_IGN);
	struct sigaction sa = {.sa_handler = on_watchdog};
	sigaction(SIGALRM, &sa, 0);
	/* No core dumps (RLIMIT_CORE 0 for good: the workers hold no
	 * CAP_SYS_RESOURCE): a core of a worker's sparse terabyte mappings
	 * takes the sentry seconds to write, which signal/core checks apart. */
	struct rlimit nocore = {0, 0};
	setrlimit(RLIMIT_CORE, &nocore);

	u64 done = 0, k = 0, workers = 0, exits = 0, watchdog = 0, hung = 0, stopped = 0;
	u64 bysig[65] = {0};
	double start = now();
	if (only != ~0UL)
		k = only, count = BUDGET;
	while (done < count) {
		u64 budget = count - done < BUDGET ? count - done : BUDGET;
		sh->calls = 0;
		sh->last[0][0] = sh->last[1][0] = ~0UL;
		pid_t pid = fork();
		if (pid < 0) {
			perror("fuzz_syscalls: fork");
			return 1;
		}
		if (pid == 0)
			worker(seed, k, sh, budget, debug);
		if (debug)
			fprintf(stderr, "fuzz: worker %lu is pid %d\n", k, pid);
		double deadline = now() + WATCHDOG_S;
		int status, nudged = 0, killed = 0;
		for (;;) {
			double left = deadline - now();
			if (!nudged && left <= 0) {
				/* What Linux would wait on too: a vfork child stopped by
				 * its sibling's SIGSTOP, a tick lost while a handler was
				 * being changed. Continue everything, tick again. */
				kill(-1, SIGCONT);
				kill(pid, SIGALRM);
				nudged = 1;
				watchdog++;
				deadline = now() + 2;
				left = 2;
				fprintf(stderr, "fuzz: worker %lu (seed %lu) took over %d s: nudged", k, seed, WATCHDOG_S);
				print_last(sh);
			}
			if (!killed && left <= 0) {
				/* SIGCONT and signals did not end its wait: the sentry's
				 * doing. */
				kill(pid, SIGKILL);
				killed = 1;
				hung++;
				fprintf(stderr, "fuzz: worker %lu (seed %lu) hung: killed", k, seed);
				print_last(sh);
			}
			alarmed = 0;
			if (!killed)
				alarm((unsigned)left + 1);
			/* Any child, clones too: a worker's thread that made init
			 * its tracer (PTRACE_TRACEME) stays a zombie until init
			 * reaps it, and its process's end is not reported before
			 * (Linux's delay_group_leader). */
			int wstatus;
			pid_t got = waitpid(-1, &wstatus, WUNTRACED | __WALL);
			alarm(0);
			if (got > 0 && got != pid) {
				/* A tracee of init that stopped: let it go on. */
				if (WIFSTOPPED(wstatus) && ptrace(PTRACE_DETACH, got, 0, 0) < 0)
					kill(got, SIGKILL);
				continue;
			}
			if (got == pid)
				status = wstatus;
			if (got == pid && WIFSTOPPED(status)) {
				/* It stopped itself (SIGSTOP, SIGTSTP, SIGTTOU...). */
				stopped++;
				kill(pid, SIGKILL);
				continue;
			}
			if (got == pid)
				break;
			if (got < 0 && errno != EINTR) {
				perror("fuzz_syscalls: waitpid");
				return 1;
			}
		}
		/* The worker's children, which it did not wait for, are init's
		 * now. */
		while (waitpid(-1, 0, WNOHANG | __WALL) > 0)
			;
		if (WIFEXITED(status)) {
			if (WEXITSTATUS(status) != 0 && !killed) {
				/* A worker ends with exit_group(0); another status means a call
				 * did something it should not have. */
				fprintf(stderr, "fuzz: worker %lu (seed %lu) exited %d", k, seed, WEXITSTATUS(status));
				print_last(sh);
				return 1;
			}
			exits++;
		} else if (WIFSIGNALED(status)) {
			bysig[WTERMSIG(status) & 63]++;
			if (debug || only != ~0UL) {
				fprintf(stderr, "fuzz: worker %lu (seed %lu) died of signal %d", k, seed, WTERMSIG(status));
				print_last(sh);
			}
		}
		done += sh->calls ? (sh->calls < budget ? sh->calls : budget) : 1;
		k++, workers++;
		if (only != ~0UL)
			break;
	}
	printf("fuzz: %.1f s, workers: %lu exited, %lu stopped, %lu nudged by the watchdog, %lu hung; died of signal:",
	       now() - start, exits, stopped, watchdog, hung);
	for (int s = 1; s < 65; s++)
		if (bysig[s])
			printf(" %d:%lu", s, bysig[s]);
	printf("\n");
	if (hung) {
		fprintf(stderr, "fuzz: %lu workers hung\n", hung);
		return 1;
	}
	if (sh->nbad) {
		for (u64 i = 0; i < sh->nbad && i < 8; i++)
			fprintf(stderr,
				"fuzz: wrong answer: worker %lu (seed %lu): syscall %lu(%#lx, %#lx, %#lx, %#lx, %#lx, %#lx) = %#lx\n",
				sh->bad[i].worker, seed, sh->bad[i].nr, sh->bad[i].a[0], sh->bad[i].a[1], sh->bad[i].a[2],
				sh->bad[i].a[3], sh->bad[i].a[4], sh->bad[i].a[5], sh->bad[i].ret);
		fprintf(stderr, "fuzz: %lu wrong answers\n", sh->nbad);
		return 1;
	}
	printf("fuzz: %lu calls, %lu children, OK\n", done, workers);
	return 0;
}
