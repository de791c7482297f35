/*
 * moat's vDSO: clock_gettime, gettimeofday, time, getcpu and clock_getres
 * answered in the guest, without a trap into the sentry.
 *
 * The sentry keeps one parameter page current (sentry/vdso/params.go): a
 * straight line from TSC ticks to nanoseconds, published under a sequence
 * counter. The page sits PARAMS_SIZE bytes before this image in every guest
 * address space and is reached RIP-relatively, so the image needs no
 * relocation and no writable data.
 *
 * Anything this code cannot answer from the page (a clock it does not know,
 * a page marked unusable, a writer that does not finish) is passed on with
 * the `syscall` instruction: in a sandbox that traps into the sentry like any
 * other system call, which is slower but always right.
 *
 * Built freestanding: see vdso_build_test.go for the flags. The layout
 * constants (PARAMS_SIZE, PARAM_*, FLAG_*) come from params.go as -D
 * definitions and are checked against the structure below.
 */

typedef unsigned int u32;
typedef unsigned long u64;
typedef long s64;
typedef unsigned __int128 u128;

#define offsetof(t, m) __builtin_offsetof(t, m)

/* The parameter page, as params.go writes it. */
struct params {
	u64 seq;      /* odd while the sentry writes */
	u32 flags;    /* FLAG_TSC: the line below may be used */
	u32 shift;    /* ns = base + ((tsc - tsc_base) * mult) >> shift */
	u64 tsc_base;
	u64 mult;
	s64 mono_base; /* guest CLOCK_MONOTONIC at tsc_base, ns */
	s64 real_base; /* CLOCK_REALTIME at tsc_base, ns */
	u64 tsc_hz;    /* informational */
	u32 cpu_trap;  /* not 0: getcpu asks the kernel */
};

_Static_assert(offsetof(struct params, seq) == PARAM_SEQ, "seq");
_Static_assert(offsetof(struct params, flags) == PARAM_FLAGS, "flags");
_Static_assert(offsetof(struct params, shift) == PARAM_SHIFT, "shift");
_Static_assert(offsetof(struct params, tsc_base) == PARAM_TSC_BASE, "tsc_base");
_Static_assert(offsetof(struct params, mult) == PARAM_MULT, "mult");
_Static_assert(offsetof(struct params, mono_base) == PARAM_MONO_BASE, "mono_base");
_Static_assert(offsetof(struct params, real_base) == PARAM_REAL_BASE, "real_base");
_Static_assert(offsetof(struct params, cpu_trap) == PARAM_CPU_TRAP, "cpu_trap");
_Static_assert(sizeof(struct params) <= PARAMS_SIZE, "size");

/* Defined by vdso.lds, PARAMS_SIZE bytes before the ELF header. */
extern const volatile struct params moat_vdso_params __attribute__((visibility("hidden")));

/* Linux's user ABI, x86-64. */
struct k_timespec { s64 tv_sec; s64 tv_nsec; };
struct k_timeval { s64 tv_sec; s64 tv_usec; };
struct k_timezone { int tz_minuteswest; int tz_dsttime; };

enum {
	SYS_gettimeofday = 96,
	SYS_time = 201,
	SYS_clock_gettime = 228,
	SYS_clock_getres = 229,
	SYS_getcpu = 309,
};

enum {
	CLOCK_REALTIME = 0,
	CLOCK_MONOTONIC = 1,
	CLOCK_MONOTONIC_RAW = 4,
	CLOCK_REALTIME_COARSE = 5,
	CLOCK_MONOTONIC_COARSE = 6,
	CLOCK_BOOTTIME = 7,
	CLOCK_TAI = 11,
};

#define NSEC_PER_SEC 1000000000L
#define COARSE_RES_NS 4000000L

/* How many times a reader waits for a writer before it asks the kernel. */
#define MAX_TRIES 1000

static inline long sys2(long nr, long a, long b)
{
	long ret;
	__asm__ volatile("syscall"
			 : "=a"(ret)
			 : "0"(nr), "D"(a), "S"(b)
			 : "rcx", "r11", "memory");
	return ret;
}

static inline long sys3(long nr, long a, long b, long c)
{
	long ret;
	__asm__ volatile("syscall"
			 : "=a"(ret)
			 : "0"(nr), "D"(a), "S"(b), "d"(c)
			 : "rcx", "r11", "memory");
	return ret;
}

#define barrier() __asm__ volatile("" ::: "memory")

/* The TSC, read after every earlier load has completed. */
static inline u64 tsc_ordered(void)
{
	u32 lo, hi;
	__asm__ volatile("lfence\n\trdtsc" : "=a"(lo), "=d"(hi) :: "memory");
	return ((u64)hi << 32) | lo;
}

enum { MONO, REAL };

/*
 * now_ns reads clock `which` (MONO or REAL) from the parameter page. It
 * returns 0 and the time in *ns, or -1 when the kernel must answer.
 */
static inline int now_ns(int which, s64 *ns)
{
	const volatile struct params *p = &moat_vdso_params;

	for (int i = 0; i < MAX_TRIES; i++) {
		u64 seq = p->seq;
		if (seq & 1) {
			__asm__ volatile("pause");
			continue;
		}
		barrier();
		u32 flags = p->flags;
		u32 shift = p->shift;
		u64 base = p->tsc_base;
		u64 mult = p->mult;
		s64 at = which == REAL ? p->real_base : p->mono_base;
		u64 tsc = tsc_ordered();
		barrier();
		if (p->seq != seq)
			continue;
		if (!(flags & FLAG_TSC))
			return -1;
		/* A TSC read before the base was taken counts as the base. */
		u64 delta = (s64)(tsc - base) < 0 ? 0 : tsc - base;
		*ns = at + (s64)(((u128)delta * mult) >> (shift & 63));
		return 0;
	}
	return -1;
}

/* which_clock maps a clock id to MONO or REAL, or -1 for the kernel. */
static inline int which_clock(int id)
{
	switch (id) {
	case CLOCK_REALTIME:
	case CLOCK_REALTIME_COARSE:
	case CLOCK_TAI:
		return REAL;
	case CLOCK_MONOTONIC:
	case CLOCK_MONOTONIC_RAW:
	case CLOCK_MONOTONIC_COARSE:
	case CLOCK_BOOTTIME:
		return MONO;
	}
	return -1;
}

static inline void split(s64 ns, s64 *sec, s64 *nsec)
{
	s64 s = ns / NSEC_PER_SEC, n = ns % NSEC_PER_SEC;
	if (n < 0) {
		n += NSEC_PER_SEC;
		s--;
	}
	*sec = s;
	*nsec = n;
}

#define EXPORT __attribute__((visibility("default")))

EXPORT int __vdso_clock_gettime(int id, struct k_timespec *ts)
{
	int which = which_clock(id);
	s64 ns;
	if (which < 0 || now_ns(which, &ns) != 0)
		return sys2(SYS_clock_gettime, id, (long)ts);
	split(ns, &ts->tv_sec, &ts->tv_nsec);
	return 0;
}

EXPORT int __vdso_gettimeofday(struct k_timeval *tv, struct k_timezone *tz)
{
	if (tv) {
		s64 ns, usec;
		if (now_ns(REAL, &ns) != 0)
			return sys2(SYS_gettimeofday, (long)tv, (long)tz);
		split(ns, &tv->tv_sec, &usec);
		tv->tv_usec = usec / 1000;
	}
	if (tz) {
		/* The sandbox runs in UTC, as the sentry's gettimeofday says. */
		tz->tz_minuteswest = 0;
		tz->tz_dsttime = 0;
	}
	return 0;
}

EXPORT long __vdso_time(long *t)
{
	s64 ns, sec, nsec;
	if (now_ns(REAL, &ns) != 0)
		return sys2(SYS_time, (long)t, 0);
	split(ns, &sec, &nsec);
	if (t)
		*t = sec;
	return sec;
}

EXPORT int __vdso_getcpu(unsigned *cpu, unsigned *node, void *cache)
{
	/*
	 * A thread's CPU is the lowest its affinity allows: 0 for every thread
	 * until one is kept off CPU 0, when the page says so and the kernel,
	 * which knows each thread's affinity, answers.
	 */
	if (moat_vdso_params.cpu_trap)
		return sys3(SYS_getcpu, (long)cpu, (long)node, (long)cache);
	if (cpu)
		*cpu = 0;
	if (node)
		*node = 0;
	return 0;
}

EXPORT int __vdso_clock_getres(int id, struct k_timespec *res)
{
	s64 ns;
	switch (id) {
	case CLOCK_REALTIME:
	case CLOCK_MONOTONIC:
	case CLOCK_MONOTONIC_RAW:
	case CLOCK_BOOTTIME:
	case CLOCK_TAI:
		ns = 1;
		break;
	case CLOCK_REALTIME_COARSE:
	case CLOCK_MONOTONIC_COARSE:
		ns = COARSE_RES_NS;
		break;
	default:
		return sys2(SYS_clock_getres, id, (long)res);
	}
	if (res) {
		res->tv_sec = 0;
		res->tv_nsec = ns;
	}
	return 0;
}

/* The names without the prefix, as Linux's vDSO also exports them. */
EXPORT int clock_gettime(int, struct k_timespec *) __attribute__((weak, alias("__vdso_clock_gettime")));
EXPORT int gettimeofday(struct k_timeval *, struct k_timezone *) __attribute__((weak, alias("__vdso_gettimeofday")));
EXPORT long time(long *) __attribute__((weak, alias("__vdso_time")));
EXPORT int getcpu(unsigned *, unsigned *, void *) __attribute__((weak, alias("__vdso_getcpu")));
EXPORT int clock_getres(int, struct k_timespec *) __attribute__((weak, alias("__vdso_clock_getres")));

/*
 * The note Linux's vDSO carries: the kernel version (LINUX_VERSION_CODE), which
 * old dynamic loaders read from it. moat reports release 6.1.0.
 */
__attribute__((section(".note.Linux"), aligned(4), used))
static const struct {
	u32 namesz, descsz, type;
	char name[8];
	u32 desc;
} linux_note = {6, 4, 0, "Linux", LINUX_VERSION_CODE};
