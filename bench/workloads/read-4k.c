/*
 * read-4k: reading 4 KiB from a file already in the page cache, in ns per read.
 *
 * It preads the first 4 KiB of its own executable (argv[0], which moat-bench
 * always gives as an absolute path) over and over, so the cost is the file
 * read path (fd lookup, page cache copy), not the disk. In a sandbox this is
 * where a gofer round trip per read would show.
 */
#include <fcntl.h>
#include <unistd.h>

#include "bench.h"

int main(int argc, char **argv)
{
	struct run r = run_begin(argc, argv);
	static char buf[4096];
	int fd = open(argv[0], O_RDONLY);
	long n;

	if (fd < 0)
		fail(argv[0]);
	if (pread(fd, buf, sizeof buf, 0) != sizeof buf)
		fail("pread");
	while ((n = run_next(&r, 1000)) > 0)
		for (long i = 0; i < n; i++)
			if (pread(fd, buf, sizeof buf, 0) != sizeof buf)
				fail("pread");
	run_report(&r, "read-4k", 1, "ns/op");
	return 0;
}
