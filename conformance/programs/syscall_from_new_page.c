/*
 * syscall_from_new_page: system calls made from code the program wrote itself.
 *
 * A sandbox that recognises system calls by where they come from (seccomp's
 * instruction pointer, a patched libc) must still catch one issued from a page
 * that did not exist when the program started. Checks: `mov $39,%eax;
 * syscall; ret` (getpid) written into a fresh page, made executable with
 * mprotect, returns the sandbox's pid 1 (the host's pid when run natively);
 * the same from a page mapped writable and executable at once; rewriting the
 * code to call getuid (102) takes effect, so stale copies of the old code are
 * not run; an unknown system call number gives -ENOSYS, both from the new
 * page and through the C library.
 */
// covers: getpid getuid
#include "check.h"

#include <sys/mman.h>

/* stub_code returns the machine code of `mov $nr,%eax; syscall; ret`. */
static void stub_code(unsigned char code[8], unsigned int nr)
{
	code[0] = 0xb8; /* mov $imm32, %eax */
	memcpy(code + 1, &nr, 4);
	code[5] = 0x0f; /* syscall */
	code[6] = 0x05;
	code[7] = 0xc3; /* ret */
}

/* run calls the code at p, which returns the raw result in %rax. The call
 * clobbers what a system call clobbers, which a normal call allows. */
static long run(void *p)
{
	return ((long (*)(void))p)();
}

static void test_mprotected_page(long want_pid)
{
	long page = sysconf(_SC_PAGESIZE);
	unsigned char *p = (unsigned char *)CHECK_OK(mmap(NULL, page,
		PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));

	if (p == MAP_FAILED)
		return;
	stub_code(p, SYS_getpid);
	CHECK_OK(mprotect(p, page, PROT_READ | PROT_EXEC));
	CHECK_EQ(run(p), want_pid);

	/* Rewrite the same page to call getuid and run it again. */
	CHECK_OK(mprotect(p, page, PROT_READ | PROT_WRITE));
	stub_code(p, SYS_getuid);
	CHECK_OK(mprotect(p, page, PROT_READ | PROT_EXEC));
	CHECK_EQ(run(p), getuid());

	/* Code at the very end of the page. */
	CHECK_OK(mprotect(p, page, PROT_READ | PROT_WRITE));
	stub_code(p + page - 8, SYS_getpid);
	CHECK_OK(mprotect(p, page, PROT_READ | PROT_EXEC));
	CHECK_EQ(run(p + page - 8), want_pid);
	munmap(p, page);
}

static void test_rwx_page(long want_pid)
{
	long page = sysconf(_SC_PAGESIZE);
	unsigned char *p = (unsigned char *)CHECK_OK(mmap(NULL, page,
		PROT_READ | PROT_WRITE | PROT_EXEC,
		MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));

	if (p == MAP_FAILED)
		return;
	stub_code(p, SYS_getpid);
	CHECK_EQ(run(p), want_pid);
	/* Changed in place, without any mprotect in between. */
	stub_code(p, 100000);
	CHECK_EQ(run(p), -ENOSYS);
	stub_code(p, SYS_getuid);
	CHECK_EQ(run(p), getuid());
	munmap(p, page);
}

int main(int argc, char **argv)
{
	long want_pid;

	check_init(argc, argv);
	want_pid = check_native ? getpid() : 1;
	test_mprotected_page(want_pid);
	test_rwx_page(want_pid);
	CHECK_ERR(syscall(100000), ENOSYS);
	CHECK_ERR(syscall(-1L), ENOSYS);
	return check_finish();
}
