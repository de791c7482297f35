/*
 * proc_vm: reading and writing another process's memory
 * (process_vm_readv, process_vm_writev).
 *
 * Debuggers, profilers (py-spy, rbspy), MPI libraries and checkpointers
 * copy another process's memory this way, faster than /proc/<pid>/mem.
 * Checks: a process reads and writes its own memory and its child's
 * (scattered on both sides: 3 local buffers against 2 remote ones); the
 * remote memory keeps its protection (a PROT_NONE page is EFAULT to read,
 * a read-only one EFAULT to write); a copy that reaches an unmapped remote
 * page stops there and returns the bytes before it (a page), as does one
 * whose next remote range is bad, and EFAULT when nothing moved; a bad
 * local buffer is EFAULT; an empty local vector returns 0 before the pid is
 * looked at; EINVAL for a flag, more than 1024 iovecs on either side and a
 * negative length on either side; EFAULT for an unreadable vector; ESRCH
 * for a pid no process has; EPERM for a child that made itself
 * non-dumpable (without CAP_SYS_PTRACE, which the program drops natively).
 */
// covers: process_vm_readv process_vm_writev
#include "check.h"

#include <stdint.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/uio.h>

static long page;

static long vm_read(pid_t pid, struct iovec *l, unsigned long nl, struct iovec *r,
		    unsigned long nr, unsigned long flags)
{
	return syscall(SYS_process_vm_readv, pid, l, nl, r, nr, flags);
}

static long vm_write(pid_t pid, struct iovec *l, unsigned long nl, struct iovec *r,
		     unsigned long nr, unsigned long flags)
{
	return syscall(SYS_process_vm_writev, pid, l, nl, r, nr, flags);
}

static void drop_sys_ptrace(void)
{
	struct __user_cap_header_struct h = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct d[2];

	CHECK_OK(syscall(SYS_capget, &h, d));
	d[CAP_SYS_PTRACE / 32].effective &= ~(1u << (CAP_SYS_PTRACE % 32));
	CHECK_OK(syscall(SYS_capset, &h, d));
}

static void test_self(void)
{
	char *m = (char *)CHECK_OK(mmap(NULL, 4 * page, PROT_READ | PROT_WRITE,
					MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
	char a[3], b[5], c[8];
	struct iovec l[3] = { { a, 3 }, { b, 5 }, { c, 8 } };
	struct iovec r[2] = { { m, 6 }, { m + page - 5, 10 } };
	struct iovec one, bad;
	int i;

	for (i = 0; i < 4 * (int)page; i++)
		m[i] = (char)i;
	/* 16 bytes: 6 from m, then 10 that cross into the next page. */
	CHECK_EQ(vm_read(getpid(), l, 3, r, 2, 0), 16);
	CHECK_EQ(a[0], m[0]);
	CHECK_EQ(b[2], m[5]);
	CHECK_EQ(b[3], m[page - 5]);
	CHECK_EQ(c[7], m[page + 4]);

	/* Write: the local buffers, scattered the other way. */
	memcpy(a, "abc", 3);
	memcpy(b, "defgh", 5);
	memcpy(c, "ijklmnop", 8);
	r[0].iov_base = m + 2 * page;
	r[0].iov_len = 16;
	CHECK_EQ(vm_write(getpid(), l, 3, r, 1, 0), 16);
	CHECK_MEM(m + 2 * page, "abcdefghijklmnop", 16);

	/* Protection is kept: PROT_NONE is unreadable, PROT_READ unwritable. */
	CHECK_OK(mprotect(m + 3 * page, page, PROT_NONE));
	one.iov_base = c;
	one.iov_len = 8;
	r[0].iov_base = m + 3 * page;
	r[0].iov_len = 8;
	CHECK_ERR(vm_read(getpid(), &one, 1, r, 1, 0), EFAULT);
	CHECK_OK(mprotect(m + 3 * page, page, PROT_READ));
	CHECK_ERR(vm_write(getpid(), &one, 1, r, 1, 0), EFAULT);
	CHECK_EQ(vm_read(getpid(), &one, 1, r, 1, 0), 8);

	/* A copy stops at the first unmapped page and returns what moved. */
	CHECK_OK(munmap(m + page, page));
	{
		char *big = malloc(2 * page);
		struct iovec lb = { big, 2 * page };
		struct iovec rb[2] = { { m, 2 * page }, { m + 2 * page, 16 } };

		CHECK_EQ(vm_read(getpid(), &lb, 1, rb, 2, 0), page);
		/* The next range bad: what came before it. */
		rb[0].iov_len = 100;
		rb[1].iov_base = m + page;
		CHECK_EQ(vm_read(getpid(), &lb, 1, rb, 2, 0), 100);
		rb[0].iov_base = m + page;
		CHECK_ERR(vm_read(getpid(), &lb, 1, rb, 1, 0), EFAULT);
		CHECK_ERR(vm_write(getpid(), &lb, 1, rb, 1, 0), EFAULT);
		free(big);
	}

	/* A bad local buffer. */
	bad.iov_base = (void *)8;
	bad.iov_len = 8;
	r[0].iov_base = m;
	r[0].iov_len = 8;
	CHECK_ERR(vm_read(getpid(), &bad, 1, r, 1, 0), EFAULT);
	CHECK_ERR(vm_write(getpid(), &bad, 1, r, 1, 0), EFAULT);

	/* Argument checks. */
	CHECK_EQ(vm_read(999999, &one, 0, r, 1, 0), 0);
	CHECK_EQ(vm_read(999999, NULL, 0, NULL, 0, 0), 0);
	CHECK_ERR(vm_read(999999, &one, 1, r, 1, 0), ESRCH);
	CHECK_ERR(vm_write(999999, &one, 1, r, 1, 0), ESRCH);
	CHECK_ERR(vm_read(getpid(), &one, 1, r, 1, 1), EINVAL);
	CHECK_ERR(vm_read(getpid(), &one, 1025, r, 1, 0), EINVAL);
	CHECK_ERR(vm_read(getpid(), &one, 1, r, 1025, 0), EINVAL);
	CHECK_ERR(vm_read(getpid(), (void *)8, 1, r, 1, 0), EFAULT);
	CHECK_ERR(vm_read(getpid(), &one, 1, (void *)8, 1, 0), EFAULT);
	bad.iov_base = c;
	bad.iov_len = (size_t)-1;
	CHECK_ERR(vm_read(getpid(), &bad, 1, r, 1, 0), EINVAL);
	CHECK_ERR(vm_read(getpid(), &one, 1, &bad, 1, 0), EINVAL);
	munmap(m, 4 * page);
}

static char shared_buf[64];

static void test_child(void)
{
	int go[2], ready[2];
	char want[64], got[64], byte = 0;
	struct iovec l = { got, sizeof(got) }, r = { shared_buf, sizeof(shared_buf) };
	pid_t pid;

	CHECK_OK(pipe(go));
	CHECK_OK(pipe(ready));
	pid = check_fork();
	if (pid == 0) {
		memset(shared_buf, 'c', sizeof(shared_buf));
		CHECK_EQ(write(ready[1], &byte, 1), 1);
		/* The parent reads, then writes "parent"; then this child
		 * turns non-dumpable. */
		CHECK_EQ(read(go[0], &byte, 1), 1);
		CHECK_MEM(shared_buf, "parent", 6);
		CHECK_OK(prctl(PR_SET_DUMPABLE, 0));
		CHECK_EQ(write(ready[1], &byte, 1), 1);
		CHECK_EQ(read(go[0], &byte, 1), 1);
		check_child_exit();
	}
	CHECK_EQ(read(ready[0], &byte, 1), 1);
	memset(want, 'c', sizeof(want));
	CHECK_EQ(vm_read(pid, &l, 1, &r, 1, 0), sizeof(got));
	CHECK_MEM(got, want, sizeof(want));
	memcpy(got, "parent", 6);
	l.iov_len = 6;
	CHECK_EQ(vm_write(pid, &l, 1, &r, 1, 0), 6);
	/* The parent's own copy is untouched. */
	CHECK(shared_buf[0] != 'p');
	CHECK_EQ(write(go[1], &byte, 1), 1);
	CHECK_EQ(read(ready[0], &byte, 1), 1);
	CHECK_ERR(vm_read(pid, &l, 1, &r, 1, 0), EPERM);
	CHECK_ERR(vm_write(pid, &l, 1, &r, 1, 0), EPERM);
	CHECK_EQ(write(go[1], &byte, 1), 1);
	CHECK_CHILD(pid, "exited 0");
	/* Reaped: no such process. */
	CHECK_ERR(vm_read(pid, &l, 1, &r, 1, 0), ESRCH);
}

int main(int argc, char **argv)
{
	check_init(argc, argv);
	page = sysconf(_SC_PAGESIZE);
	drop_sys_ptrace();
	test_self();
	test_child();
	return check_finish();
}
