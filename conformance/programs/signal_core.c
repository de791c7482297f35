/*
 * signal_core: core dumps.
 *
 * Shells print "(core dumped)", crash reporters and test harnesses look
 * at WCOREDUMP and open the core with gdb. With the kernel's default
 * core_pattern ("core": a file in the working directory; a host with a
 * pipe there sends cores to a helper, and then only what does not
 * depend on it is checked) checks: a process killed by SIGSEGV, SIGABRT or SIGQUIT
 * with RLIMIT_CORE unlimited reports core dumped (WCOREDUMP; waitid and
 * SIGCHLD say CLD_DUMPED with the signal as si_status) and leaves "core",
 * mode 0600 less the umask, owned by it, replacing an old one: an ELF
 * core for x86-64 whose notes hold the thread's status (NT_PRSTATUS: the
 * signal, its pid, its registers), the process (NT_PRPSINFO: its name),
 * the signal (NT_SIGINFO: SEGV_MAPERR at address 0) and the auxiliary
 * vector (NT_AUXV), and whose loadable segments hold its memory (data it
 * wrote in anonymous memory and on its stack). Without a dump: RLIMIT_CORE
 * 0 or under a page, an undumpable process (PR_SET_DUMPABLE 0), SIGKILL
 * or SIGTERM, leave no file and no WCOREDUMP. A dump RLIMIT_CORE cuts
 * short writes at most the limit (and still reports core dumped, as
 * Linux 6.x does).
 */
// covers: wait4 waitid
#include "check.h"

#include <elf.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/procfs.h>
#include <sys/reg.h>
#include <sys/resource.h>
#include <sys/stat.h>

#define MARK "moat-core-marker"

static int file_pattern; /* core_pattern is "core" */

static int core_pattern_is_file(void)
{
	char buf[256] = "";
	int fd = open("/proc/sys/kernel/core_pattern", O_RDONLY);
	ssize_t n;

	if (fd < 0)
		return 0;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	return n > 0 && strcmp(buf, "core\n") == 0;
}

static volatile char *anon_mark;
static volatile char stack_copy_seen;

enum how { BY_SEGV, BY_ABORT, BY_QUIT, BY_KILL, BY_TERM };

/* die is the child: limit is its RLIMIT_CORE (RLIM_INFINITY or bytes);
 * it puts markers in its memory, then dies as how says. */
static void die(rlim_t limit, int dumpable, enum how how, size_t extra)
{
	struct rlimit rl = { limit, RLIM_INFINITY };
	volatile char on_stack[64];

	if (setrlimit(RLIMIT_CORE, &rl) != 0)
		_exit(90);
	if (!dumpable && prctl(PR_SET_DUMPABLE, 0) != 0)
		_exit(91);
	anon_mark = mmap(NULL, 4096 + extra, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (anon_mark == MAP_FAILED)
		_exit(92);
	strcpy((char *)anon_mark, MARK "-anon");
	for (size_t i = 4096; i < 4096 + extra; i += 4096)
		anon_mark[i] = 1; /* memory the dump must write */
	strcpy((char *)on_stack, MARK "-stack");
	stack_copy_seen = on_stack[0];
	switch (how) {
	case BY_SEGV:
		*(volatile int *)0 = 1;
		break;
	case BY_ABORT:
		abort();
	case BY_QUIT:
		kill(getpid(), SIGQUIT);
		break;
	case BY_KILL:
		kill(getpid(), SIGKILL);
		break;
	case BY_TERM:
		kill(getpid(), SIGTERM);
		break;
	}
	_exit(93);
}

/* run forks die in dir and returns its wait status; si gets waitid's. */
static int run(const char *dir, rlim_t limit, int dumpable, enum how how, size_t extra, siginfo_t *si, pid_t *pidp)
{
	int status;
	pid_t pid = fork();

	CHECK(pid >= 0);
	if (pid == 0) {
		if (chdir(dir) != 0)
			_exit(94);
		die(limit, dumpable, how, extra);
	}
	*pidp = pid;
	memset(si, 0, sizeof(*si));
	CHECK_OK(waitid(P_PID, pid, si, WEXITED | WNOWAIT));
	CHECK_EQ(waitpid(pid, &status, 0), pid);
	return status;
}

/* find looks for s in [p, p+n). */
static int find(const char *p, size_t n, const char *s)
{
	size_t k = strlen(s);

	for (size_t i = 0; i + k <= n; i++)
		if (memcmp(p + i, s, k) == 0)
			return 1;
	return 0;
}

/* check_core reads dir/core and checks what the dump of pid holds. */
static void check_core(const char *path, pid_t pid, int sig)
{
	struct stat st;
	char *core;
	Elf64_Ehdr *eh;
	Elf64_Phdr *ph;
	int fd, notes = 0, prstatus = 0, psinfo = 0, siginfo = 0, auxv = 0, anon = 0, stack = 0;

	fd = CHECK_OK(open(path, O_RDONLY));
	CHECK_OK(fstat(fd, &st));
	CHECK_EQ(st.st_mode & 07777, 0600 & ~022);
	CHECK_EQ(st.st_uid, geteuid());
	CHECK(st.st_size > (off_t)sizeof(Elf64_Ehdr));
	core = mmap(NULL, st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	CHECK(core != MAP_FAILED);
	close(fd);
	if (core == MAP_FAILED)
		return;
	eh = (Elf64_Ehdr *)core;
	CHECK_MEM(eh->e_ident, ELFMAG, SELFMAG);
	CHECK_EQ(eh->e_ident[EI_CLASS], ELFCLASS64);
	CHECK_EQ(eh->e_type, ET_CORE);
	CHECK_EQ(eh->e_machine, EM_X86_64);
	CHECK_EQ(eh->e_phentsize, sizeof(Elf64_Phdr));
	ph = (Elf64_Phdr *)(core + eh->e_phoff);
	for (int i = 0; i < eh->e_phnum; i++) {
		if (ph[i].p_offset + ph[i].p_filesz > (uint64_t)st.st_size) {
			CHECK(!"a segment past the end of the file");
			continue;
		}
		if (ph[i].p_type == PT_LOAD) {
			anon |= find(core + ph[i].p_offset, ph[i].p_filesz, MARK "-anon");
			stack |= find(core + ph[i].p_offset, ph[i].p_filesz, MARK "-stack");
			continue;
		}
		if (ph[i].p_type != PT_NOTE)
			continue;
		notes++;
		for (uint64_t off = 0; off + sizeof(Elf64_Nhdr) <= ph[i].p_filesz;) {
			Elf64_Nhdr *n = (Elf64_Nhdr *)(core + ph[i].p_offset + off);
			char *name = (char *)(n + 1);
			char *desc = name + ((n->n_namesz + 3) & ~3u);

			if (n->n_type == NT_PRSTATUS && strcmp(name, "CORE") == 0 && !prstatus) {
				struct elf_prstatus *pr = (struct elf_prstatus *)desc;

				prstatus = 1;
				CHECK_EQ(n->n_descsz, sizeof(*pr));
				CHECK_EQ(pr->pr_cursig, sig);
				CHECK_EQ(pr->pr_info.si_signo, sig);
				CHECK_EQ(pr->pr_pid, pid);
				CHECK_EQ(pr->pr_ppid, getpid());
				CHECK(pr->pr_reg[RIP] != 0 && pr->pr_reg[RSP] != 0);
			} else if (n->n_type == NT_PRPSINFO && strcmp(name, "CORE") == 0) {
				struct elf_prpsinfo *ps = (struct elf_prpsinfo *)desc;

				psinfo = 1;
				CHECK_EQ(n->n_descsz, sizeof(*ps));
				CHECK_EQ(ps->pr_pid, pid);
				CHECK_STR(ps->pr_fname, "signal_core");
			} else if (n->n_type == NT_SIGINFO && strcmp(name, "CORE") == 0) {
				siginfo_t *si = (siginfo_t *)desc;

				siginfo = 1;
				CHECK_EQ(n->n_descsz, sizeof(*si));
				CHECK_EQ(si->si_signo, sig);
				if (sig == SIGSEGV) {
					CHECK_EQ(si->si_code, SEGV_MAPERR);
					CHECK(si->si_addr == NULL);
				}
			} else if (n->n_type == NT_AUXV && strcmp(name, "CORE") == 0) {
				Elf64_auxv_t *a = (Elf64_auxv_t *)desc;
				int pagesz = 0;

				auxv = 1;
				for (; (char *)(a + 1) <= desc + n->n_descsz && a->a_type != AT_NULL; a++)
					if (a->a_type == AT_PAGESZ)
						pagesz = (int)a->a_un.a_val;
				CHECK_EQ(pagesz, 4096);
			}
			off += sizeof(*n) + ((n->n_namesz + 3) & ~3u) + ((n->n_descsz + 3) & ~3u);
		}
	}
	CHECK_EQ(notes, 1);
	CHECK(prstatus && psinfo && siginfo && auxv);
	CHECK(anon);
	CHECK(stack);
	munmap(core, st.st_size);
}

static int exists(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0;
}

int main(int argc, char **argv)
{
	char dir[] = "/tmp/signal_core.XXXXXX", path[64];
	siginfo_t si;
	pid_t pid;
	int st, fd;

	check_init(argc, argv);
	umask(022);
	file_pattern = core_pattern_is_file();
	if (!file_pattern)
		printf("core_pattern is not \"core\": the core file's checks are left out\n");
	CHECK(mkdtemp(dir) != NULL);
	snprintf(path, sizeof(path), "%s/core", dir);

	/* No dump: RLIMIT_CORE 0 or under a page, undumpable, SIGKILL, SIGTERM. */
	st = run(dir, 0, 1, BY_SEGV, 0, &si, &pid);
	CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGSEGV);
	if (file_pattern) {
		CHECK(!WCOREDUMP(st));
		CHECK_EQ(si.si_code, CLD_KILLED);
		CHECK(!exists(path));
		st = run(dir, 4095, 1, BY_SEGV, 0, &si, &pid);
		CHECK(WIFSIGNALED(st) && !WCOREDUMP(st));
		CHECK(!exists(path));
	}
	st = run(dir, RLIM_INFINITY, 0, BY_SEGV, 0, &si, &pid);
	CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGSEGV && !WCOREDUMP(st));
	CHECK_EQ(si.si_code, CLD_KILLED);
	CHECK(!exists(path));
	st = run(dir, RLIM_INFINITY, 1, BY_KILL, 0, &si, &pid);
	CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL && !WCOREDUMP(st));
	st = run(dir, RLIM_INFINITY, 1, BY_TERM, 0, &si, &pid);
	CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGTERM && !WCOREDUMP(st));
	CHECK(!exists(path));

	/* A dump: WCOREDUMP, CLD_DUMPED, and the file. (Whether a pipe's
	 * helper took a dump is the host's affair.) */
	st = run(dir, RLIM_INFINITY, 1, BY_SEGV, 0, &si, &pid);
	CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGSEGV);
	CHECK_EQ(si.si_status, SIGSEGV);
	if (file_pattern) {
		CHECK(WCOREDUMP(st));
		CHECK_EQ(si.si_code, CLD_DUMPED);
		check_core(path, pid, SIGSEGV);
	}

	if (file_pattern) {
		/* An old core, written over (a new file: the old one is gone). */
		struct stat before, after;

		CHECK_OK(chmod(path, 0644));
		CHECK_OK(stat(path, &before));
		fd = CHECK_OK(open(path, O_RDONLY)); /* keeps the old file alive */
		st = run(dir, RLIM_INFINITY, 1, BY_ABORT, 0, &si, &pid);
		CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT && WCOREDUMP(st));
		CHECK_OK(stat(path, &after));
		CHECK(after.st_ino != before.st_ino);
		close(fd);
		check_core(path, pid, SIGABRT);

		/* A dump that does not fit RLIMIT_CORE: cut there. */
		CHECK_OK(unlink(path));
		st = run(dir, 64 * 1024, 1, BY_QUIT, 1 << 20, &si, &pid);
		CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGQUIT && WCOREDUMP(st));
		CHECK_EQ(si.si_code, CLD_DUMPED);
		{
			struct stat cut;

			CHECK_OK(stat(path, &cut));
			CHECK(cut.st_blocks * 512 <= 64 * 1024 + 4096);
		}
		CHECK_OK(unlink(path));
	}
	unlink(path);
	CHECK_OK(rmdir(dir));
	return check_finish();
}
