/*
 * open-close: opening and closing an existing file, in ns per open+close pair.
 *
 * It opens its own executable (argv[0], /bench/open-close under moat-bench):
 * a two-component path lookup and a file description's life cycle, the
 * metadata path a sandbox serves through its gofer and dentry cache.
 */
#include <fcntl.h>
#include <unistd.h>

#include "bench.h"

int main(int argc, char **argv)
{
	struct run r = run_begin(argc, argv);
	long n;

	while ((n = run_next(&r, 1000)) > 0)
		for (long i = 0; i < n; i++) {
			int fd = open(argv[0], O_RDONLY);

			if (fd < 0)
				fail(argv[0]);
			close(fd);
		}
	run_report(&r, "open-close", 1, "ns/op");
	return 0;
}
