/*
 * fuzz_findings: what TestGuestSyscallFuzz found, checked once each, as
 * Linux answers it (it passes under runc). Run as a sandbox's init; prints
 * OK, or a FAIL line per difference. A regression of the init checks kills
 * init: the run then exits 137.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/sched.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int failed;
#define CHECK(cond, ...)                                                                                               \
	do {                                                                                                           \
		if (!(cond)) {                                                                                         \
			printf("FAIL line %d: ", __LINE__);                                                            \
			printf(__VA_ARGS__);                                                                           \
			printf("\n");                                                                                  \
			failed = 1;                                                                                    \
		}                                                                                                      \
	} while (0)

static sigset_t current_mask(void)
{
	sigset_t m;
	sigprocmask(SIG_SETMASK, 0, &m);
	return m;
}

/* vfork_child_exits is vfork whose child exits at once, touching nothing
 * of the memory it shares with its parent. */
static long vfork_child_exits(void)
{
	long ret;
	__asm__ volatile("syscall\n\t"
			 "test %%rax, %%rax\n\t"
			 "jnz 1f\n\t"
			 "mov $60, %%eax\n\t"
			 "xor %%edi, %%edi\n\t"
			 "syscall\n"
			 "1:"
			 : "=a"(ret)
			 : "a"(SYS_vfork)
			 : "rcx", "r11", "rdi", "memory");
	return ret;
}

static volatile int spinning = 1;
static void *spin(void *arg)
{
	(void)arg;
	sigset_t alrm;
	sigemptyset(&alrm);
	sigaddset(&alrm, SIGALRM); /* the ticks are for the vforking thread */
	pthread_sigmask(SIG_BLOCK, &alrm, 0);
	while (spinning)
		syscall(SYS_getppid);
	return 0;
}
static void nothing(int sig) { (void)sig; }

/* vfork_under_signals vforks for a while in a process with a second thread
 * and a fast timer: a signal in the parent's wait once made it wait on a
 * channel its child had cleared, for ever. */
static void vfork_under_signals(void)
{
	pid_t pid = fork();
	if (pid == 0) {
		struct sigaction sa = {.sa_handler = nothing};
		sigaction(SIGALRM, &sa, 0);
		struct itimerval tick = {{0, 200}, {0, 200}};
		setitimer(ITIMER_REAL, &tick, 0);
		pthread_t th;
		pthread_create(&th, 0, spin, 0);
		struct timespec start, now;
		clock_gettime(CLOCK_MONOTONIC, &start);
		do {
			vfork_child_exits();
			clock_gettime(CLOCK_MONOTONIC, &now);
		} while ((now.tv_sec - start.tv_sec) * 1000000000L + now.tv_nsec - start.tv_nsec < 500000000L);
		spinning = 0;
		pthread_join(th, 0);
		_exit(0);
	}
	/* Init's watchdog: SIGALRM, without SA_RESTART, ends its wait. */
	struct sigaction sa = {.sa_handler = nothing};
	sigaction(SIGALRM, &sa, 0);
	alarm(5);
	int st;
	pid_t got = waitpid(pid, &st, 0);
	alarm(0);
	CHECK(got == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0, "vforks under signals: still waiting after 5 s");
	if (got != pid) {
		kill(pid, SIGKILL);
		waitpid(pid, 0, 0);
	}
}

static void *vfork_forever(void *arg)
{
	(void)arg;
	for (;;)
		vfork_child_exits();
	return 0;
}

/* vfork_while_exiting: a process exits (exit_group) while its other thread
 * vforks. The sentry ends an exiting process's stub at once when no other
 * process shares it; a vfork under way could still add its child to that
 * stub, and the child was then killed with it (SIGKILL instead of exit 0).
 * Linux fails a clone with EINTR once the caller is dying. */
static void vfork_while_exiting(void)
{
	int killed = 0;
	for (int round = 0; round < 100; round++) {
		pid_t pid = fork();
		if (pid == 0) {
			pthread_t th;
			pthread_create(&th, 0, vfork_forever, 0);
			struct timespec ts = {0, 200000 + (round % 10) * 50000};
			nanosleep(&ts, 0);
			syscall(SYS_exit_group, 0);
		}
		int st;
		pid_t got;
		while ((got = waitpid(-1, &st, __WALL)) > 0)
			if (got != pid && WIFSIGNALED(st))
				killed++;
	}
	CHECK(killed == 0, "%d vfork children of an exiting process were killed", killed);
}

int main(void)
{
	int p[2];
	char buf[16];
	setvbuf(stdout, 0, _IONBF, 0);
	if (pipe(p))
		return 2;

	/* An empty path names the pipe itself, which has no place in the tree
	 * (the sentry used to dereference its missing dentry and panic). */
	errno = 0;
	CHECK(syscall(SYS_readlinkat, p[0], "", buf, sizeof buf) == -1 && errno == ENOENT,
	      "readlinkat(pipe, \"\"): errno %d, want ENOENT", errno);
	CHECK(syscall(SYS_faccessat2, p[0], "", F_OK, AT_EMPTY_PATH) == 0,
	      "faccessat2(pipe, \"\", AT_EMPTY_PATH): errno %d, want success", errno);

	/* A failed epoll_pwait leaves the signal mask as it was (it used to
	 * keep the one it would have waited with). */
	sigset_t before = current_mask(), block;
	sigfillset(&block);
	struct epoll_event ev;
	errno = 0;
	CHECK(syscall(SYS_epoll_pwait, p[0], &ev, 1, 0, &block, 8) == -1 && errno == EINVAL,
	      "epoll_pwait(pipe): errno %d, want EINVAL", errno);
	sigset_t after = current_mask();
	CHECK(memcmp(&before, &after, sizeof before) == 0, "epoll_pwait's mask outlived its failure");

	/* A shared mapping wholly past the end of a file is made (touching it
	 * would raise SIGBUS) and the process goes on (an empty range used to
	 * reach the host, which refused it, and the process was killed). */
	int fd = syscall(SYS_memfd_create, "f", 0);
	CHECK(write(fd, "short", 5) == 5, "write to a memfd");
	void *m = mmap(0, 8192, PROT_READ, MAP_SHARED, fd, 1UL << 30);
	CHECK(m != MAP_FAILED, "mmap past EOF: errno %d", errno);

	/* mincore of no bytes succeeds (the sentry indexed an empty view of a
	 * mapped page and panicked). */
	unsigned char vec[1];
	char *pages = mmap(0, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	pages[4096] = 1;
	CHECK(mincore(pages + 4096, 0, vec) == 0, "mincore(mapped, 0): errno %d", errno);

	/* A TLS base beyond user space is refused, as arch_prctl refuses it
	 * (the child's stub thread used to die loading it). */
	errno = 0;
	long pid = syscall(SYS_clone, SIGCHLD | CLONE_SETTLS, 0, 0, 0, 0x1e478d0cc5eb66UL);
	if (pid == 0)
		_exit(0);
	CHECK(pid == -1 && errno == EPERM, "clone(CLONE_SETTLS, non-canonical base) = %ld, errno %d, want EPERM", pid,
	      errno);
	if (pid > 0)
		waitpid(pid, 0, __WALL);

	/* Nothing a process inside sends kills init: a sibling made with
	 * CLONE_PARENT and exit signal SIGKILL (it gets its maker's exit
	 * signal), an orphan with exit signal SIGKILL (reparenting resets it to
	 * SIGCHLD), rt_sigqueueinfo of SIGKILL (ignored, as kill's is). */
	pid = fork();
	if (pid == 0) {
		if (syscall(SYS_clone, CLONE_PARENT | SIGKILL, 0, 0, 0, 0) == 0)
			_exit(0);
		if (syscall(SYS_clone, SIGKILL, 0, 0, 0, 0) == 0) {
			usleep(50000); /* ends after its parent, as init's child */
			_exit(0);
		}
		siginfo_t si = {.si_code = SI_QUEUE};
		_exit(syscall(SYS_rt_sigqueueinfo, 1, SIGKILL, &si) == 0 ? 0 : 3);
	}
	int st, children = 0, bad = 0;
	for (int round = 0; round < 2; round++) {
		while (waitpid(-1, &st, __WALL) > 0)
			children++, bad |= !WIFEXITED(st) || WEXITSTATUS(st) != 0;
		usleep(100000);
	}
	CHECK(children == 3 && !bad, "init reaped %d children, want 3 that exited 0", children);

	vfork_under_signals();
	vfork_while_exiting();

	if (!failed)
		printf("OK\n");
	return failed;
}
