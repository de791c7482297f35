/*
 * loader: runs a program with moat's vDSO in place of the host's, as moat's
 * kernel will: the parameter page (read-only) and the image (read-execute)
 * mapped from one shared file, AT_SYSINFO_EHDR pointing at the image.
 *
 *   loader [-s] FD PARAMS_SIZE PROGRAM [ARGS...]
 *
 * FD is an open file holding the parameter area then the image; the test
 * that starts the loader keeps the parameters current through its own shared
 * mapping of the same file. PROGRAM is an ELF executable (static, static-pie,
 * or the dynamic loader itself, which then loads ARGS[0]). With -s, the
 * system calls the vDSO replaces (clock_gettime, clock_getres, gettimeofday,
 * time, getcpu) fail with EPERM, so any answer the program gets came from
 * the vDSO.
 *
 * Freestanding: no libc, raw system calls. Linked away from 0x400000, where
 * a non-PIE static program goes.
 */

typedef unsigned long u64;
typedef unsigned int u32;
typedef unsigned short u16;
typedef unsigned char u8;
typedef long s64;

#define AT_NULL 0
#define AT_PHDR 3
#define AT_PHENT 4
#define AT_PHNUM 5
#define AT_BASE 7
#define AT_ENTRY 9
#define AT_EXECFN 31
#define AT_SYSINFO_EHDR 33

struct ehdr {
	u8 ident[16];
	u16 type, machine;
	u32 version;
	u64 entry, phoff, shoff;
	u32 flags;
	u16 ehsize, phentsize, phnum, shentsize, shnum, shstrndx;
};

struct phdr {
	u32 type, flags;
	u64 offset, vaddr, paddr, filesz, memsz, align;
};

#define PT_LOAD 1
#define PT_PHDR 6
#define ET_EXEC 2
#define ET_DYN 3

static long sys6(long nr, long a, long b, long c, long d, long e, long f)
{
	long ret;
	register long r10 __asm__("r10") = d;
	register long r8 __asm__("r8") = e;
	register long r9 __asm__("r9") = f;
	__asm__ volatile("syscall"
			 : "=a"(ret)
			 : "0"(nr), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8), "r"(r9)
			 : "rcx", "r11", "memory");
	return ret;
}

#define sys(nr, a, b, c) sys6(nr, (long)(a), (long)(b), (long)(c), 0, 0, 0)

enum {
	SYS_write = 1, SYS_open = 2, SYS_mmap = 9, SYS_mprotect = 10,
	SYS_pread64 = 17, SYS_prctl = 157, SYS_exit_group = 231,
};

#define PROT_READ 1
#define PROT_WRITE 2
#define PROT_EXEC 4
#define MAP_SHARED 1
#define MAP_PRIVATE 2
#define MAP_FIXED 0x10
#define MAP_ANONYMOUS 0x20
#define PAGE 4096UL

void *memset(void *d, int c, u64 n)
{
	u8 *p = d;
	while (n--)
		*p++ = (u8)c;
	return d;
}

void *memcpy(void *d, const void *s, u64 n)
{
	u8 *p = d;
	const u8 *q = s;
	while (n--)
		*p++ = *q++;
	return d;
}

static u64 slen(const char *s)
{
	u64 n = 0;
	while (s[n])
		n++;
	return n;
}

static void puts2(const char *s) { sys(SYS_write, 2, s, slen(s)); }

static void die(const char *what, long err)
{
	char buf[24];
	int i = sizeof buf;
	u64 v = err < 0 ? -err : err;
	buf[--i] = '\n';
	do
		buf[--i] = '0' + v % 10;
	while ((v /= 10) && i > 1);
	puts2("loader: ");
	puts2(what);
	puts2(": error ");
	sys(SYS_write, 2, buf + i, sizeof buf - i);
	sys(SYS_exit_group, 127, 0, 0);
	__builtin_unreachable();
}

static long check(const char *what, long r)
{
	if (r < 0 && r > -4096)
		die(what, r);
	return r;
}

static u64 atou(const char *s)
{
	u64 v = 0;
	while (*s >= '0' && *s <= '9')
		v = v * 10 + (u64)(*s++ - '0');
	return v;
}

static void hex(const char *label, u64 v)
{
	char buf[40];
	int i = 0;
	for (const char *p = label; *p; p++)
		buf[i++] = *p;
	buf[i++] = '0';
	buf[i++] = 'x';
	for (int sh = 60; sh >= 0; sh -= 4)
		buf[i++] = "0123456789abcdef"[(v >> sh) & 15];
	buf[i++] = '\n';
	sys(SYS_write, 1, buf, i);
}

/* The seccomp filter of -s: EPERM for the calls the vDSO replaces. */
static void deny_time_calls(void)
{
	struct insn { u16 code; u8 jt, jf; u32 k; };
	static const u32 nrs[] = {228, 229, 96, 201, 309};
	struct insn prog[2 + 5 + 1];
	int n = 0;
	prog[n++] = (struct insn){0x20, 0, 0, 0}; /* ld [nr] */
	for (int i = 0; i < 5; i++)        /* jeq nr -> deny */
		prog[n++] = (struct insn){0x15, (u8)(5 - i), 0, nrs[i]};
	prog[n++] = (struct insn){0x06, 0, 0, 0x7fff0000};   /* allow */
	prog[n++] = (struct insn){0x06, 0, 0, 0x00050000 | 1}; /* errno EPERM */
	struct { u16 len; struct insn *filter; } fprog = {(u16)n, prog};
	check("no_new_privs", sys6(SYS_prctl, 38, 1, 0, 0, 0, 0));
	check("seccomp", sys6(SYS_prctl, 22, 2, (long)&fprog, 0, 0, 0));
}

/* load maps an ELF program and returns its entry; *phdr gets AT_PHDR. */
static u64 load(const char *path, u64 *phdr, u64 *phnum)
{
	int fd = (int)check(path, sys(SYS_open, path, 0, 0));
	struct ehdr eh;
	static struct phdr ph[64];
	if (sys6(SYS_pread64, fd, (long)&eh, sizeof eh, 0, 0, 0) != sizeof eh || eh.ident[0] != 0x7f ||
	    eh.ident[1] != 'E' || eh.phentsize != sizeof(struct phdr) || eh.phnum > 64 ||
	    (eh.type != ET_EXEC && eh.type != ET_DYN))
		die("not an x86-64 executable", 0);
	u64 n = eh.phnum * sizeof(struct phdr);
	if ((u64)sys6(SYS_pread64, fd, (long)ph, (long)n, (long)eh.phoff, 0, 0) != n)
		die("read program headers", 0);

	u64 lo = ~0UL, hi = 0;
	for (int i = 0; i < eh.phnum; i++) {
		if (ph[i].type != PT_LOAD)
			continue;
		if (ph[i].vaddr < lo)
			lo = ph[i].vaddr;
		if (ph[i].vaddr + ph[i].memsz > hi)
			hi = ph[i].vaddr + ph[i].memsz;
	}
	lo &= ~(PAGE - 1);
	hi = (hi + PAGE - 1) & ~(PAGE - 1);
	u64 bias = 0;
	if (eh.type == ET_DYN) {
		long base = check("reserve", sys6(SYS_mmap, 0, (long)(hi - lo), 0, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
		bias = (u64)base - lo;
	}
	*phdr = 0;
	for (int i = 0; i < eh.phnum; i++) {
		struct phdr *p = &ph[i];
		if (p->type == PT_PHDR)
			*phdr = bias + p->vaddr;
		if (p->type != PT_LOAD)
			continue;
		if (!*phdr && p->offset <= eh.phoff && eh.phoff < p->offset + p->filesz)
			*phdr = bias + p->vaddr + (eh.phoff - p->offset);
		int prot = (p->flags & 4 ? PROT_READ : 0) | (p->flags & 2 ? PROT_WRITE : 0) | (p->flags & 1 ? PROT_EXEC : 0);
		u64 start = bias + p->vaddr, page = start & ~(PAGE - 1);
		u64 fend = start + p->filesz, mend = start + p->memsz;
		u64 fpage_end = (fend + PAGE - 1) & ~(PAGE - 1), mpage_end = (mend + PAGE - 1) & ~(PAGE - 1);
		if (p->filesz)
			check("map segment", sys6(SYS_mmap, (long)page, (long)(fpage_end - page), prot | PROT_WRITE,
						   MAP_PRIVATE | MAP_FIXED, fd, (long)(p->offset & ~(PAGE - 1))));
		if (p->memsz > p->filesz) {
			if (p->filesz)
				memset((void *)fend, 0, fpage_end - fend);
			if (mpage_end > fpage_end)
				check("map bss", sys6(SYS_mmap, (long)fpage_end, (long)(mpage_end - fpage_end), prot,
						       MAP_PRIVATE | MAP_FIXED | MAP_ANONYMOUS, -1, 0));
		}
		if (p->filesz)
			check("protect segment", sys(SYS_mprotect, page, fpage_end - page, prot));
	}
	*phnum = eh.phnum;
	return bias + eh.entry;
}

__attribute__((noreturn)) static void jump(u64 *sp, u64 entry)
{
	__asm__ volatile("mov %0, %%rsp\n\t"
			 "xor %%edx, %%edx\n\t" /* no function for atexit */
			 "xor %%ebp, %%ebp\n\t"
			 "jmp *%1"
			 :: "r"(sp), "r"(entry) : "memory");
	__builtin_unreachable();
}

__attribute__((used, noreturn)) void loader_main(u64 *sp)
{
	long argc = (long)sp[0];
	char **argv = (char **)(sp + 1);
	char **envp = argv + argc + 1;
	int envc = 0;
	while (envp[envc])
		envc++;
	u64 *auxv = (u64 *)(envp + envc + 1);

	int a = 1, seccomp = 0;
	if (a < argc && argv[a][0] == '-' && argv[a][1] == 's') {
		seccomp = 1;
		a++;
	}
	if (argc - a < 3) {
		puts2("usage: loader [-s] FD PARAMS_SIZE PROGRAM [ARGS...]\n");
		sys(SYS_exit_group, 2, 0, 0);
	}
	long fd = (long)atou(argv[a]);
	u64 params = atou(argv[a + 1]);
	char **pargv = argv + a + 2;
	long pargc = argc - a - 2;

	/* The parameter area then the image: map it all read-only, shared,
	 * then let the image execute. The image is never more than 2 pages. */
	u64 total = params + 2 * PAGE;
	long m = check("map vdso", sys6(SYS_mmap, 0, (long)total, PROT_READ, MAP_SHARED, fd, 0));
	check("protect vdso", sys(SYS_mprotect, m + params, 2 * PAGE, PROT_READ | PROT_EXEC));
	u64 vdso = (u64)m + params;
	hex("loader vdso ", vdso);

	u64 phdr, phnum;
	u64 entry = load(pargv[0], &phdr, &phnum);

	/* A new stack: argc, argv, envp, the auxiliary vector, with the
	 * program's own headers, entry and our vDSO. */
	u64 size = 1 << 20;
	u64 *top = (u64 *)(check("map stack", sys6(SYS_mmap, 0, (long)size, PROT_READ | PROT_WRITE,
						    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)) + size);
	int nauxv = 0;
	while (auxv[2 * nauxv] != AT_NULL)
		nauxv++;
	u64 words = 1 + (u64)pargc + 1 + (u64)envc + 1 + 2 * ((u64)nauxv + 2) + 2;
	u64 *nsp = (u64 *)((u64)(top - words) & ~15UL);
	u64 *w = nsp;
	*w++ = (u64)pargc;
	for (long i = 0; i < pargc; i++)
		*w++ = (u64)pargv[i];
	*w++ = 0;
	for (int i = 0; i < envc; i++)
		*w++ = (u64)envp[i];
	*w++ = 0;
	int have_ehdr = 0;
	for (int i = 0; i < nauxv; i++) {
		u64 k = auxv[2 * i], v = auxv[2 * i + 1];
		switch (k) {
		case AT_PHDR: v = phdr; break;
		case AT_PHNUM: v = phnum; break;
		case AT_PHENT: v = sizeof(struct phdr); break;
		case AT_ENTRY: v = entry; break;
		case AT_BASE: v = 0; break;
		case AT_EXECFN: v = (u64)pargv[0]; break;
		case AT_SYSINFO_EHDR: v = vdso; have_ehdr = 1; break;
		}
		*w++ = k;
		*w++ = v;
	}
	if (!have_ehdr) {
		*w++ = AT_SYSINFO_EHDR;
		*w++ = vdso;
	}
	*w++ = AT_NULL;
	*w++ = 0;

	if (seccomp)
		deny_time_calls();
	jump(nsp, entry);
}

__asm__(".globl _start\n"
	"_start:\n\t"
	"xor %ebp, %ebp\n\t"
	"mov %rsp, %rdi\n\t"
	"and $-16, %rsp\n\t"
	"call loader_main\n\t"
	"hlt\n");
