/*
 * pty_basic: pseudo-terminals, what script(1), expect, ssh and every REPL
 * driven by a test harness open to get a terminal.
 *
 * Checks: posix_openpt gives a master whose replica (ptsname) cannot be
 * opened, nor reached with TIOCGPTPEER, until unlockpt (EIO); grantpt and
 * openpty work; ttyname names the replica as /dev/pts/N and stat of that
 * name is the replica's fstat; TIOCGPTN is ENOTTY on the replica; a new pty
 * has ICRNL|IXON, OPOST|ONLCR, CS8|CREAD and ISIG|ICANON|ECHO|ECHOE|ECHOK|
 * ECHOCTL|ECHOKE|IEXTEN, VINTR ^C, VERASE DEL, VKILL ^U, VEOF ^D, VMIN 1, and
 * the master reads the same settings; canonical mode returns one line per
 * read (the rest of a long line at the next read), ^D ends a line without a
 * terminator and alone reads as end of file, FIONREAD counts whole lines;
 * the echo of typed text, DEL, tab erasure, ^W and ^U is Linux's byte for
 * byte; ICRNL on input and ONLCR on output; raw mode returns at VMIN bytes,
 * VMIN 0 with VTIME waits that long and returns 0, VMIN 0 VTIME 0 returns 0
 * at once, with O_NONBLOCK too (VMIN 1 then gives EAGAIN); a pty stays CS8 without parity whatever
 * tcsetattr asks; the window size set on the master is the replica's;
 * poll sees a line to read; closing the master hangs up the replica: a
 * waiting reader gets EIO, later reads end of file, writes and tcgetattr EIO,
 * poll POLLHUP, and the name is gone; with the replica closed the master
 * reads what is left, then EIO, and sees POLLHUP.
 */
// covers: ioctl open read write close poll
#include "check.h"

#include <poll.h>
#include <pty.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <termios.h>

/* drain reads from fd into buf until it holds want bytes or a read has
 * waited 1 s for more (a pty's echo reaches the master a little later on
 * Linux), and returns how many it has. */
static int drain(int fd, char *buf, int want)
{
	int got = 0;

	while (got < want) {
		struct pollfd p = { fd, POLLIN, 0 };
		int n;

		if (poll(&p, 1, 1000) != 1 || !(p.revents & POLLIN))
			break;
		n = read(fd, buf + got, want - got);
		if (n <= 0)
			break;
		got += n;
	}
	return got;
}

/* openpt opens a master and its unlocked replica. */
static int openpt(int *replica)
{
	int m = posix_openpt(O_RDWR | O_NOCTTY);

	CHECK(m >= 0);
	CHECK_OK(grantpt(m));
	CHECK_OK(unlockpt(m));
	*replica = open(ptsname(m), O_RDWR | O_NOCTTY);
	CHECK(*replica >= 0);
	return m;
}

static void test_open(void)
{
	int m = posix_openpt(O_RDWR | O_NOCTTY), r, n = -1;
	char name[64], *tn;
	struct stat st, fst;

	CHECK(m >= 0);
	CHECK_OK(ioctl(m, TIOCGPTN, &n));
	snprintf(name, sizeof(name), "/dev/pts/%d", n);
	CHECK_STR(ptsname(m), name);
	CHECK_ERR(open(name, O_RDWR | O_NOCTTY), EIO);
	CHECK_ERR(ioctl(m, TIOCGPTPEER, O_RDWR | O_NOCTTY), EIO);
	CHECK_OK(unlockpt(m));
	r = open(name, O_RDWR | O_NOCTTY);
	CHECK(r >= 0);
	CHECK_ERR(ioctl(r, TIOCGPTN, &n), ENOTTY);
	CHECK(isatty(r));
	tn = ttyname(r);
	CHECK(tn != NULL);
	if (tn)
		CHECK_STR(tn, name);
	CHECK_OK(stat(name, &st));
	CHECK_OK(fstat(r, &fst));
	CHECK(S_ISCHR(st.st_mode));
	CHECK_EQ(st.st_ino, fst.st_ino);
	CHECK_EQ(st.st_dev, fst.st_dev);
	CHECK_EQ(st.st_rdev, fst.st_rdev);
	CHECK_EQ(major(st.st_rdev), 136);
	n = ioctl(m, TIOCGPTPEER, O_RDWR | O_NOCTTY);
	CHECK(n >= 0);
	if (n >= 0) {
		CHECK_OK(fstat(n, &st));
		CHECK_EQ(st.st_rdev, fst.st_rdev);
		close(n);
	}
	close(r);
	close(m);

	/* openpty does all of it, and sets the size. */
	{
		struct winsize ws = { 30, 100, 0, 0 }, got;
		int mm, rr;

		CHECK_OK(openpty(&mm, &rr, name, NULL, &ws));
		CHECK_OK(ioctl(rr, TIOCGWINSZ, &got));
		CHECK_EQ(got.ws_row, 30);
		CHECK_EQ(got.ws_col, 100);
		CHECK(strncmp(name, "/dev/pts/", 9) == 0);
		close(rr);
		close(mm);
	}
}

static void test_defaults(void)
{
	int r, m = openpt(&r);
	struct termios t, mt;

	CHECK_OK(tcgetattr(r, &t));
	CHECK_EQ(t.c_iflag, ICRNL | IXON);
	CHECK_EQ(t.c_oflag, OPOST | ONLCR);
	CHECK_EQ(t.c_cflag & ~CBAUD, CS8 | CREAD);
	CHECK_EQ(t.c_lflag, ISIG | ICANON | ECHO | ECHOE | ECHOK | ECHOCTL | ECHOKE | IEXTEN);
	CHECK_EQ(t.c_cc[VINTR], 3);
	CHECK_EQ(t.c_cc[VQUIT], 034);
	CHECK_EQ(t.c_cc[VERASE], 0177);
	CHECK_EQ(t.c_cc[VKILL], 025);
	CHECK_EQ(t.c_cc[VEOF], 4);
	CHECK_EQ(t.c_cc[VMIN], 1);
	CHECK_EQ(t.c_cc[VTIME], 0);
	CHECK_EQ(t.c_cc[VSUSP], 032);
	CHECK_EQ(t.c_cc[VWERASE], 027);
	CHECK_OK(tcgetattr(m, &mt));
	CHECK_EQ(mt.c_lflag, t.c_lflag);

	/* A pty is 8 bits, readable, without parity. */
	t.c_cflag = (t.c_cflag & ~(CSIZE | CREAD)) | CS7 | PARENB;
	/* The kernel takes it (glibc's tcsetattr, seeing it not applied,
	 * says EINVAL). */
	CHECK_OK(ioctl(r, TCSETS, &t));
	CHECK_OK(tcgetattr(r, &t));
	CHECK_EQ(t.c_cflag & (CSIZE | CREAD | PARENB), CS8 | CREAD);
	close(r);
	close(m);
}

static void test_canonical(void)
{
	int r, m = openpt(&r), n;
	char buf[64];
	struct pollfd p = { 0, POLLIN, 0 };

	CHECK_EQ(write(m, "one\rtwo", 7), 7);
	p.fd = r;
	CHECK_EQ(poll(&p, 1, 1000), 1);
	CHECK_EQ(read(r, buf, sizeof(buf)), 4);
	CHECK_MEM(buf, "one\n", 4);
	n = 0;
	CHECK_OK(ioctl(r, FIONREAD, &n));
	CHECK_EQ(n, 0); /* "two" is not a line yet */
	CHECK_EQ(write(m, "\n", 1), 1);
	check_sleep_ms(50);
	CHECK_OK(ioctl(r, FIONREAD, &n));
	CHECK_EQ(n, 4);
	CHECK_EQ(read(r, buf, 2), 2);
	CHECK_MEM(buf, "tw", 2);
	CHECK_EQ(read(r, buf, sizeof(buf)), 2);
	CHECK_MEM(buf, "o\n", 2);
	CHECK_EQ(drain(m, buf, 10), 10);
	CHECK_MEM(buf, "one\r\ntwo\r\n", 10);

	/* Editing, and its echo as Linux writes it: DEL is \b \b, DEL of a tab
	 * that began at column 2 is six \b, ^W erases "abx" (\b \b each), ^U
	 * on an empty line echoes nothing. */
	{
		static const char want[] = "ab\tc\b \b\b\b\b\b\b\bx\b \b\b \b\b \byz\r\n";

		CHECK_EQ(write(m, "ab\tc\177\177x\027\025yz\n", 12), 12);
		CHECK_EQ(read(r, buf, sizeof(buf)), 3);
		CHECK_MEM(buf, "yz\n", 3);
		CHECK_EQ(drain(m, buf, sizeof(want) - 1), sizeof(want) - 1);
		CHECK_MEM(buf, want, sizeof(want) - 1);
	}
	/* ^D ends a line without itself, and alone is an end of file. */
	CHECK_EQ(write(m, "abc\004\004", 5), 5);
	CHECK_EQ(read(r, buf, sizeof(buf)), 3);
	CHECK_MEM(buf, "abc", 3);
	CHECK_EQ(read(r, buf, sizeof(buf)), 0);
	CHECK_EQ(drain(m, buf, 3), 3);
	CHECK_MEM(buf, "abc", 3);

	/* ^W is BSD's ALTWERASE: punctuation before the word goes with it. */
	CHECK_EQ(write(m, "cp a.txt  \027\n", 12), 12);
	n = read(r, buf, sizeof(buf));
	CHECK_EQ(n, 6);
	CHECK_MEM(buf, "cp a.\n", 6);
	drain(m, buf, sizeof(buf));

	/* Output: ONLCR. */
	CHECK_EQ(write(r, "x\ny", 3), 3);
	CHECK_EQ(drain(m, buf, 4), 4);
	CHECK_MEM(buf, "x\r\ny", 4);
	close(r);
	close(m);
}

static void test_raw(void)
{
	int r, m = openpt(&r);
	char buf[16];
	struct termios t;
	long long start;

	CHECK_OK(tcgetattr(r, &t));
	cfmakeraw(&t);
	t.c_cc[VMIN] = 3;
	t.c_cc[VTIME] = 0;
	CHECK_OK(tcsetattr(r, TCSANOW, &t));
	CHECK_EQ(write(m, "\177\003\r", 3), 3);
	CHECK_EQ(read(r, buf, sizeof(buf)), 3);
	CHECK_MEM(buf, "\177\003\r", 3); /* no editing, no signal, no ICRNL */

	t.c_cc[VMIN] = 0;
	t.c_cc[VTIME] = 2; /* 0.2 s */
	CHECK_OK(tcsetattr(r, TCSANOW, &t));
	start = check_now_ns();
	CHECK_EQ(read(r, buf, sizeof(buf)), 0);
	CHECK(check_now_ns() - start >= 150000000LL);

	t.c_cc[VTIME] = 0;
	CHECK_OK(tcsetattr(r, TCSANOW, &t));
	CHECK_EQ(read(r, buf, sizeof(buf)), 0);
	fcntl(r, F_SETFL, O_NONBLOCK);
	CHECK_EQ(read(r, buf, sizeof(buf)), 0); /* not EAGAIN */
	t.c_cc[VMIN] = 1;
	CHECK_OK(tcsetattr(r, TCSANOW, &t));
	CHECK_ERR(read(r, buf, sizeof(buf)), EAGAIN);
	close(r);
	close(m);
}

static void test_hangup(void)
{
	int r, m = openpt(&r);
	char buf[16], name[64];
	struct termios t;
	struct pollfd p;
	pid_t pid;

	snprintf(name, sizeof(name), "%s", ptsname(m));
	pid = check_fork();
	if (pid == 0) {
		close(m);
		CHECK_ERR(read(r, buf, sizeof(buf)), EIO);
		check_child_exit();
	}
	check_sleep_ms(100);
	close(m);
	CHECK_CHILD(pid, "exited 0");
	CHECK_EQ(read(r, buf, sizeof(buf)), 0);
	CHECK_ERR(write(r, "x", 1), EIO);
	CHECK_ERR(tcgetattr(r, &t), EIO);
	p = (struct pollfd){ r, POLLIN | POLLOUT, 0 };
	CHECK_EQ(poll(&p, 1, 0), 1);
	CHECK(p.revents & POLLHUP);
	CHECK_ERR(access(name, F_OK), ENOENT);
	close(r);

	m = openpt(&r);
	CHECK_EQ(write(r, "zz", 2), 2);
	close(r);
	p = (struct pollfd){ m, POLLIN, 0 };
	CHECK_EQ(poll(&p, 1, 1000), 1);
	CHECK(p.revents & POLLHUP);
	CHECK_EQ(drain(m, buf, 2), 2);
	CHECK_MEM(buf, "zz", 2);
	CHECK_ERR(read(m, buf, sizeof(buf)), EIO);
	close(m);
}

int main(int argc, char **argv)
{
	check_init(argc, argv);
	test_open();
	test_defaults();
	test_canonical();
	test_raw();
	test_hangup();
	return check_finish();
}
