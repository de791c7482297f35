/*
 * file_aio: Linux AIO (io_setup, io_submit, io_getevents, io_pgetevents,
 * io_cancel, io_destroy), the way libaio drives it.
 *
 * Databases (MySQL's InnoDB, PostgreSQL's io_method=worker fallbacks,
 * ScyllaDB), QEMU and fio submit their file I/O this way; libaio reads the
 * completion ring in user memory before it makes a call.
 * Checks: io_setup returns a context that is the address of a ring whose
 * header carries the magic, its size and head == tail; EINVAL for 0
 * events or a context pointer that does not hold 0, EFAULT for a bad one;
 * io_submit of pwrite, pread and preadv on a memfd, and fsync, returns the
 * count, writes aio_key to 0, and each event carries aio_data, the iocb's
 * address and the bytes moved (a read into unmapped memory -EFAULT; the
 * reads and writes complete in submission order, Linux's fsync maybe later); the ring's tail moves as events arrive and its head as
 * io_getevents takes them; IOCB_FLAG_RESFD signals the eventfd once per
 * event; io_submit's errors: EINVAL for a negative count, an unknown
 * opcode, a reserved field, fsync with a buffer, a context that is none
 * and a resfd that is no eventfd; EBADF for a bad fd or resfd, EFAULT for a
 * bad list or iocb, and the count submitted when a later iocb fails;
 * io_getevents: EINVAL for min_nr above nr or negative and a bad context,
 * EFAULT for a bad timeout or event buffer (the event stays), a zero
 * timeout returns at once and a 20 ms one after it with what there is;
 * io_pgetevents with a signal mask (EINVAL for a wrong sigset size);
 * io_cancel of a completed request EINVAL; io_destroy, then EINVAL for the
 * context; a forked child has no contexts.
 */
// covers: io_setup io_destroy io_submit io_cancel io_getevents io_pgetevents
#include "check.h"

#include <linux/aio_abi.h>
#include <stdint.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/uio.h>

struct ring {
	unsigned id, nr, head, tail, magic, compat, incompat, header_length;
	struct io_event events[];
};

static long io_setup(unsigned nr, aio_context_t *ctx)
{
	return syscall(SYS_io_setup, nr, ctx);
}

static long io_submit(aio_context_t ctx, long nr, struct iocb **list)
{
	return syscall(SYS_io_submit, ctx, nr, list);
}

static long io_getevents(aio_context_t ctx, long min, long nr, struct io_event *ev,
			 struct timespec *ts)
{
	return syscall(SYS_io_getevents, ctx, min, nr, ev, ts);
}

static void prep(struct iocb *cb, int op, int fd, void *buf, size_t n, long long off,
		 uint64_t data)
{
	memset(cb, 0, sizeof(*cb));
	cb->aio_lio_opcode = op;
	cb->aio_fildes = fd;
	cb->aio_buf = (uintptr_t)buf;
	cb->aio_nbytes = n;
	cb->aio_offset = off;
	cb->aio_data = data;
	cb->aio_key = 0x5555;
}

static long submit1(aio_context_t ctx, struct iocb *cb)
{
	return io_submit(ctx, 1, &cb);
}

int main(int argc, char **argv)
{
	aio_context_t ctx = 0, other = 0;
	struct ring *ring;
	struct iocb cbs[5], *list[5], bad;
	struct io_event ev[8];
	struct timespec zero = { 0, 0 }, ms20 = { 0, 20000000 };
	char buf[16], a[3], b[2];
	struct iovec iov[2] = { { a, 3 }, { b, 2 } };
	uint64_t count;
	long long t0;
	int fd, efd, i;
	pid_t pid;

	check_init(argc, argv);
	CHECK_ERR(io_setup(0, &ctx), EINVAL);
	CHECK_ERR(io_setup(8, (aio_context_t *)8), EFAULT);
	other = 1;
	CHECK_ERR(io_setup(8, &other), EINVAL);
	CHECK_EQ(io_setup(8, &ctx), 0);
	CHECK(ctx != 0);
	ring = (struct ring *)ctx;
	CHECK_EQ(ring->magic, 0xa10a10a1);
	CHECK(ring->nr >= 8);
	CHECK_EQ(ring->header_length, sizeof(struct ring));
	CHECK_EQ(ring->head, ring->tail);

	fd = CHECK_OK(syscall(SYS_memfd_create, "aio", 0));
	efd = CHECK_OK(eventfd(0, 0));
	prep(&cbs[0], IOCB_CMD_PWRITE, fd, "hello", 5, 0, 100);
	prep(&cbs[1], IOCB_CMD_PREAD, fd, buf, 5, 0, 101);
	prep(&cbs[2], IOCB_CMD_PREADV, fd, iov, 2, 0, 102);
	prep(&cbs[3], IOCB_CMD_FSYNC, fd, NULL, 0, 0, 103);
	cbs[3].aio_flags = IOCB_FLAG_RESFD;
	cbs[3].aio_resfd = efd;
	prep(&cbs[4], IOCB_CMD_PREAD, fd, (void *)8, 5, 0, 104);
	cbs[4].aio_flags = IOCB_FLAG_RESFD;
	cbs[4].aio_resfd = efd;
	for (i = 0; i < 5; i++)
		list[i] = &cbs[i];
	CHECK_EQ(io_submit(ctx, 5, list), 5);
	CHECK_EQ(cbs[0].aio_key, 0);
	/* The reads and writes complete at submit, in order; Linux's fsync
	 * may complete later, from a worker. */
	CHECK((ring->tail - ring->head + ring->nr) % ring->nr >= 4);

	/* A bad event buffer: EFAULT, and the events stay. */
	CHECK_ERR(io_getevents(ctx, 1, 3, (struct io_event *)8, NULL), EFAULT);
	/* Take two, then the rest. */
	CHECK_EQ(io_getevents(ctx, 1, 2, ev, NULL), 2);
	CHECK_EQ(ev[0].data, 100);
	CHECK_EQ(ev[0].obj, (uintptr_t)&cbs[0]);
	CHECK_EQ(ev[0].res, 5);
	CHECK_EQ(ev[1].data, 101);
	CHECK_EQ(ev[1].res, 5);
	CHECK_MEM(buf, "hello", 5);
	CHECK_EQ(io_getevents(ctx, 3, 8, ev + 2, NULL), 3);
	for (i = 2; i < 5; i++) {
		switch (ev[i].data) {
		case 102:
			CHECK_EQ(ev[i].res, 5);
			CHECK_MEM(a, "hel", 3);
			CHECK_MEM(b, "lo", 2);
			break;
		case 103:
			CHECK_EQ(ev[i].res, 0);
			break;
		case 104:
			CHECK_EQ(ev[i].obj, (uintptr_t)&cbs[4]);
			CHECK_EQ(ev[i].res, -EFAULT);
			break;
		default:
			check_fail(__FILE__, __LINE__, "event with data %llu",
				   (unsigned long long)ev[i].data);
		}
	}
	CHECK_EQ(ev[2].data + ev[3].data + ev[4].data, 102 + 103 + 104);
	CHECK_EQ(ring->head, ring->tail);
	CHECK_EQ(read(efd, &count, 8), 8);
	CHECK_EQ(count, 2);

	/* Nothing left: a zero timeout returns at once, a short one after it. */
	CHECK_EQ(io_getevents(ctx, 1, 8, ev, &zero), 0);
	t0 = check_now_ns();
	CHECK_EQ(io_getevents(ctx, 1, 8, ev, &ms20), 0);
	CHECK(check_now_ns() - t0 >= 15000000LL);
	CHECK_EQ(io_getevents(ctx, 0, 8, ev, NULL), 0);
	CHECK_ERR(io_getevents(ctx, 2, 1, ev, &zero), EINVAL);
	CHECK_ERR(io_getevents(ctx, -1, 1, ev, &zero), EINVAL);
	CHECK_ERR(io_getevents(ctx, 0, -1, ev, &zero), EINVAL);
	CHECK_ERR(io_getevents(ctx + 4096, 0, 1, ev, &zero), EINVAL);
	CHECK_ERR(io_getevents(ctx, 0, 1, ev, (struct timespec *)8), EFAULT);

	/* Submission errors. */
	CHECK_ERR(io_submit(ctx, -1, list), EINVAL);
	CHECK_ERR(io_submit(ctx + 4096, 1, list), EINVAL);
	CHECK_ERR(io_submit(ctx, 1, (struct iocb **)8), EFAULT);
	list[0] = (struct iocb *)8;
	CHECK_ERR(io_submit(ctx, 1, list), EFAULT);
	prep(&bad, 99, fd, buf, 1, 0, 0);
	CHECK_ERR(submit1(ctx, &bad), EINVAL);
	prep(&bad, IOCB_CMD_PREAD, fd, buf, 1, 0, 0);
	bad.aio_reserved2 = 1;
	CHECK_ERR(submit1(ctx, &bad), EINVAL);
	prep(&bad, IOCB_CMD_PREAD, 999, buf, 1, 0, 0);
	CHECK_ERR(submit1(ctx, &bad), EBADF);
	prep(&bad, IOCB_CMD_FSYNC, fd, buf, 1, 0, 0);
	CHECK_ERR(submit1(ctx, &bad), EINVAL);
	prep(&bad, IOCB_CMD_PREAD, fd, buf, 1, 0, 0);
	bad.aio_flags = IOCB_FLAG_RESFD;
	bad.aio_resfd = fd;
	CHECK_ERR(submit1(ctx, &bad), EINVAL);
	bad.aio_resfd = 999;
	CHECK_ERR(submit1(ctx, &bad), EBADF);
	/* The first submitted, the second bad: 1. */
	prep(&cbs[0], IOCB_CMD_PREAD, fd, buf, 2, 1, 200);
	list[0] = &cbs[0];
	list[1] = (struct iocb *)8;
	CHECK_EQ(io_submit(ctx, 2, list), 1);
	CHECK_EQ(io_submit(ctx, 0, list), 0);

	/* io_pgetevents, with a mask to wait with. */
	{
		sigset_t mask;
		struct {
			const sigset_t *mask;
			size_t size;
		} sig = { &mask, 8 };

		sigemptyset(&mask);
		CHECK_EQ(syscall(SYS_io_pgetevents, ctx, 1, 8, ev, NULL, &sig), 1);
		CHECK_EQ(ev[0].data, 200);
		CHECK_MEM(buf, "el", 2);
		sig.size = 4;
		CHECK_ERR(syscall(SYS_io_pgetevents, ctx, 0, 8, ev, &zero, &sig), EINVAL);
		CHECK_EQ(syscall(SYS_io_pgetevents, ctx, 0, 8, ev, &zero, NULL), 0);
	}

	/* Completed requests cannot be cancelled. */
	CHECK_ERR(syscall(SYS_io_cancel, ctx, &cbs[0], ev), EINVAL);
	CHECK_ERR(syscall(SYS_io_cancel, ctx, (struct iocb *)8, ev), EFAULT);

	pid = check_fork();
	if (pid == 0) {
		CHECK_ERR(io_getevents(ctx, 0, 1, ev, &zero), EINVAL);
		check_child_exit();
	}
	CHECK_CHILD(pid, "exited 0");

	CHECK_EQ(syscall(SYS_io_destroy, ctx), 0);
	CHECK_ERR(syscall(SYS_io_destroy, ctx), EINVAL);
	CHECK_ERR(submit1(ctx, &cbs[0]), EINVAL);
	CHECK_ERR(io_getevents(ctx, 0, 1, ev, &zero), EINVAL);
	close(fd);
	close(efd);
	return check_finish();
}
