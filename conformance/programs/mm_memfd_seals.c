/*
 * mm_memfd_seals: memfd_create and its seals (fcntl F_ADD_SEALS,
 * F_GET_SEALS).
 *
 * Checks: without MFD_ALLOW_SEALING a memfd holds F_SEAL_SEAL and takes no
 * more; with it, none; F_SEAL_GROW refuses growing (ftruncate, a write past
 * the end, fallocate past it) but not writes inside; F_SEAL_SHRINK refuses
 * shrinking; F_SEAL_WRITE is refused (EBUSY) while a writable shared
 * mapping exists, then refuses write and writable shared
 * mappings (EPERM) and mprotect to PROT_WRITE of a shared one (EACCES),
 * while private mappings still work; F_SEAL_SEAL freezes the set; unknown
 * seals EINVAL; seals need a descriptor open for writing (EPERM); a file
 * that is no memfd takes none (EINVAL); the data stays readable.
 */
// covers: memfd_create fcntl mmap mprotect ftruncate fallocate
#include "check.h"

#include <sys/mman.h>

int main(int argc, char **argv)
{
	check_init(argc, argv);
	long page = sysconf(_SC_PAGESIZE);

	int plain = CHECK_OK(memfd_create("plain", 0));
	CHECK_EQ(fcntl(plain, F_GET_SEALS), F_SEAL_SEAL);
	CHECK_ERR(fcntl(plain, F_ADD_SEALS, F_SEAL_GROW), EPERM);

	int fd = CHECK_OK(memfd_create("sealed", MFD_ALLOW_SEALING));
	CHECK_EQ(fcntl(fd, F_GET_SEALS), 0);
	CHECK_OK(ftruncate(fd, 2 * page));
	CHECK_EQ(pwrite(fd, "data", 4, 0), 4);
	CHECK_ERR(fcntl(fd, F_ADD_SEALS, 0x8000), EINVAL);

	CHECK_OK(fcntl(fd, F_ADD_SEALS, F_SEAL_GROW | F_SEAL_SHRINK));
	CHECK_EQ(fcntl(fd, F_GET_SEALS), F_SEAL_GROW | F_SEAL_SHRINK);
	CHECK_ERR(ftruncate(fd, 3 * page), EPERM);
	CHECK_ERR(ftruncate(fd, page), EPERM);
	CHECK_OK(ftruncate(fd, 2 * page)); /* the same size */
	CHECK_ERR(pwrite(fd, "x", 1, 2 * page), EPERM);
	CHECK_ERR(fallocate(fd, 0, 2 * page, page), EPERM);
	CHECK_EQ(pwrite(fd, "inside", 6, page), 6);

	char *w = mmap(NULL, page, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	CHECK(w != MAP_FAILED);
	CHECK_ERR(fcntl(fd, F_ADD_SEALS, F_SEAL_WRITE), EBUSY);
	CHECK_OK(munmap(w, page));
	CHECK_OK(fcntl(fd, F_ADD_SEALS, F_SEAL_WRITE));
	CHECK_ERR(pwrite(fd, "no", 2, 0), EPERM);
	CHECK_OK(fallocate(fd, 0, 0, page)); /* inside: no data changes */
	CHECK(mmap(NULL, page, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0) == MAP_FAILED && errno == EPERM);
	char *r = mmap(NULL, page, PROT_READ, MAP_SHARED, fd, 0);
	CHECK(r != MAP_FAILED);
	if (r != MAP_FAILED) {
		CHECK_MEM(r, "data", 4);
		CHECK_ERR(mprotect(r, page, PROT_READ | PROT_WRITE), EACCES);
	}
	char *p = mmap(NULL, page, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
	CHECK(p != MAP_FAILED);
	if (p != MAP_FAILED) {
		p[0] = 'P'; /* a private copy may be written */
		CHECK_MEM(r, "data", 4);
	}
	char buf[8];
	CHECK_EQ(pread(fd, buf, 6, page), 6);
	CHECK_MEM(buf, "inside", 6);

	CHECK_OK(fcntl(fd, F_ADD_SEALS, F_SEAL_SEAL));
	CHECK_ERR(fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK), EPERM);
	CHECK_EQ(fcntl(fd, F_GET_SEALS), F_SEAL_GROW | F_SEAL_SHRINK | F_SEAL_WRITE | F_SEAL_SEAL);

	/* Seals need write access; other files take none. */
	int ro = CHECK_OK(memfd_create("ro", MFD_ALLOW_SEALING));
	char path[64];
	snprintf(path, sizeof(path), "/proc/self/fd/%d", ro);
	int rofd = CHECK_OK(open(path, O_RDONLY));
	CHECK_ERR(fcntl(rofd, F_ADD_SEALS, F_SEAL_GROW), EPERM);
	CHECK_EQ(fcntl(rofd, F_GET_SEALS), 0);
	int pipefd[2];
	CHECK_OK(pipe(pipefd));
	CHECK_ERR(fcntl(pipefd[1], F_ADD_SEALS, F_SEAL_GROW), EINVAL);
	CHECK_ERR(fcntl(pipefd[0], F_GET_SEALS), EINVAL);
	return check_finish();
}
