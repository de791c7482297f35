/*
 * pty_jobcontrol: controlling terminals and job control, what a shell's ^C,
 * ^Z, fg and bg, and a terminal emulator's resize rely on.
 *
 * Checks, each in a child that leads a new session: /dev/tty is ENXIO with
 * no controlling terminal; opening a replica with O_NOCTTY does not make it
 * one, without it it does, with the leader's group in the foreground
 * (TIOCGPGRP, TIOCGSID, tcgetpgrp on the master), /dev/tty opens then, and
 * /proc/self/stat's tty_nr and tpgid show it; TIOCSCTTY is EPERM for a
 * process that leads no session and for a terminal another session has, and
 * succeeds again for the session that has it; ^C typed on the master sends
 * SIGINT to the foreground group (a waiting read gets EINTR) and ^Z SIGTSTP;
 * a new window size sends SIGWINCH, the same size again does not; a
 * background reader is stopped by SIGTTIN, gets EIO when it ignores it, a
 * background writer is not stopped unless TOSTOP is set (SIGTTOU), a
 * background tcsetattr is stopped by SIGTTOU; TIOCSPGRP moves the foreground
 * to a group of the session, EPERM for another session's; closing the master
 * sends SIGHUP and SIGCONT to the session leader and takes the terminal
 * away (/dev/tty ENXIO); setsid leaves the terminal behind.
 */
// covers: ioctl setsid setpgid
#include "check.h"

#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <termios.h>

static volatile sig_atomic_t got[65];
static void count(int sig) { got[sig]++; }

static void on(int sig, void (*fn)(int))
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = fn;
	sigaction(sig, &sa, NULL);
}

static int openpt(char *name, size_t n)
{
	int m = posix_openpt(O_RDWR | O_NOCTTY);

	CHECK(m >= 0);
	CHECK_OK(grantpt(m));
	CHECK_OK(unlockpt(m));
	snprintf(name, n, "%s", ptsname(m));
	return m;
}

/* stopped_by forks a process into a group of its own (the background),
 * runs fn there and returns the signal that stopped it, 0 if it exited 0. */
static int stopped_by(void (*fn)(int), int fd)
{
	int status = 0;
	pid_t pid = check_fork();

	if (pid == 0) {
		setpgid(0, 0);
		fn(fd);
		check_child_exit();
	}
	CHECK_EQ(waitpid(pid, &status, WUNTRACED), pid);
	if (WIFSTOPPED(status)) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		return WSTOPSIG(status);
	}
	CHECK_STR(check_status_str(status), "exited 0");
	return 0;
}

static void bg_read(int fd)
{
	char c;
	read(fd, &c, 1);
}
static void bg_read_ignoring(int fd)
{
	char c;
	signal(SIGTTIN, SIG_IGN);
	CHECK_ERR(read(fd, &c, 1), EIO);
}
static void bg_write(int fd) { CHECK_EQ(write(fd, "x", 1), 1); }
static void bg_tcsetattr(int fd)
{
	struct termios t;
	tcgetattr(fd, &t);
	tcsetattr(fd, TCSANOW, &t);
}

static void test_acquire(void)
{
	char name[64];
	int m = openpt(name, sizeof(name));
	pid_t pid = check_fork();

	if (pid == 0) {
		int r, q, pg = -1, fd;
		char stat[512], *p;
		int ttynr = 0, tpgid = 0;
		struct stat st;

		close(m);
		CHECK(setsid() > 0);
		CHECK_ERR(open("/dev/tty", O_RDWR), ENXIO);
		q = open(name, O_RDWR | O_NOCTTY);
		CHECK_ERR(ioctl(q, TIOCGPGRP, &pg), ENOTTY);
		r = open(name, O_RDWR);
		CHECK(r >= 0);
		CHECK_OK(ioctl(r, TIOCGPGRP, &pg));
		CHECK_EQ(pg, getpid());
		CHECK_OK(ioctl(r, TIOCGSID, &pg));
		CHECK_EQ(pg, getpid());
		CHECK_EQ(tcgetpgrp(r), getpid());
		fd = open("/dev/tty", O_RDWR);
		CHECK(fd >= 0);
		CHECK_OK(ioctl(r, TIOCSCTTY, 0));
		CHECK_OK(fstat(r, &st));
		fd = open("/proc/self/stat", O_RDONLY);
		memset(stat, 0, sizeof(stat));
		CHECK(read(fd, stat, sizeof(stat) - 1) > 0);
		p = strrchr(stat, ')');
		CHECK(p && sscanf(p + 2, "%*c %*d %*d %*d %d %d", &ttynr, &tpgid) == 2);
		CHECK_EQ(ttynr, (major(st.st_rdev) << 8) | (minor(st.st_rdev) & 0xff));
		CHECK_EQ(tpgid, getpid());
		pid_t gc = check_fork();
		if (gc == 0) {
			CHECK_ERR(ioctl(r, TIOCSCTTY, 0), EPERM); /* leads no session */
			CHECK(setsid() > 0);
			CHECK_ERR(open("/dev/tty", O_RDWR), ENXIO);
			CHECK_ERR(ioctl(r, TIOCSCTTY, 0), EPERM); /* another session's */
			check_child_exit();
		}
		CHECK_CHILD(gc, "exited 0");
		check_child_exit();
	}
	CHECK_CHILD(pid, "exited 0");
	close(m);
}

static void test_signals(void)
{
	char name[64], c;
	int m = openpt(name, sizeof(name));
	int ready[2];
	pid_t pid;

	CHECK_OK(pipe(ready));
	on(SIGINT, count);
	on(SIGTSTP, count);
	on(SIGWINCH, count);
	pid = check_fork();
	if (pid == 0) {
		int r;
		char buf[8];

		close(m);
		setsid();
		r = open(name, O_RDWR);
		CHECK_EQ(write(ready[1], "x", 1), 1);
		CHECK_ERR(read(r, buf, sizeof(buf)), EINTR);
		CHECK_EQ(got[SIGINT], 1);
		CHECK_EQ(write(ready[1], "x", 1), 1);
		while (got[SIGTSTP] == 0 || got[SIGWINCH] == 0)
			check_sleep_ms(5);
		check_sleep_ms(100);
		CHECK_EQ(got[SIGTSTP], 1);
		CHECK_EQ(got[SIGWINCH], 1);
		check_child_exit();
	}
	CHECK_EQ(read(ready[0], &c, 1), 1);
	check_sleep_ms(100); /* the child waits in read */
	CHECK_EQ(write(m, "\003", 1), 1);
	CHECK_EQ(read(ready[0], &c, 1), 1);
	{
		struct winsize ws = { 24, 80, 0, 0 };

		CHECK_EQ(write(m, "\032", 1), 1);
		CHECK_OK(ioctl(m, TIOCSWINSZ, &ws));
		CHECK_OK(ioctl(m, TIOCSWINSZ, &ws));
	}
	CHECK_CHILD(pid, "exited 0");
	on(SIGINT, SIG_DFL);
	on(SIGTSTP, SIG_DFL);
	on(SIGWINCH, SIG_DFL);
	close(m);
}

static void test_background(void)
{
	char name[64];
	int m = openpt(name, sizeof(name));
	pid_t pid = check_fork();

	if (pid == 0) {
		int r;
		struct termios t;

		close(m);
		setsid();
		r = open(name, O_RDWR);
		CHECK_EQ(stopped_by(bg_read, r), SIGTTIN);
		CHECK_EQ(stopped_by(bg_read_ignoring, r), 0);
		CHECK_EQ(stopped_by(bg_write, r), 0);
		CHECK_EQ(stopped_by(bg_tcsetattr, r), SIGTTOU);
		CHECK_OK(tcgetattr(r, &t));
		t.c_lflag |= TOSTOP;
		CHECK_OK(tcsetattr(r, TCSANOW, &t));
		CHECK_EQ(stopped_by(bg_write, r), SIGTTOU);
		check_child_exit();
	}
	CHECK_CHILD(pid, "exited 0");
	close(m);
}

static void test_foreground(void)
{
	char name[64];
	int m = openpt(name, sizeof(name));
	pid_t other = check_fork(), pid;

	if (other == 0) {
		pause();
		_exit(0);
	}
	pid = check_fork();
	if (pid == 0) {
		int r, pg = 0, ready[2];
		char c;
		pid_t member;

		close(m);
		setsid();
		r = open(name, O_RDWR);
		CHECK_OK(pipe(ready));
		member = check_fork();
		if (member == 0) {
			setpgid(0, 0);
			write(ready[1], "x", 1);
			pause();
			_exit(0);
		}
		CHECK_EQ(read(ready[0], &c, 1), 1);
		CHECK_OK(tcsetpgrp(r, member));
		CHECK_OK(ioctl(r, TIOCGPGRP, &pg));
		CHECK_EQ(pg, member);
		signal(SIGTTOU, SIG_IGN); /* now in the background */
		CHECK_ERR(tcsetpgrp(r, other), EPERM);
		CHECK_OK(tcsetpgrp(r, getpid()));
		kill(member, SIGKILL);
		waitpid(member, NULL, 0);
		check_child_exit();
	}
	CHECK_CHILD(pid, "exited 0");
	kill(other, SIGKILL);
	waitpid(other, NULL, 0);
	close(m);
}

static void test_hangup(void)
{
	char name[64], c;
	int m = openpt(name, sizeof(name));
	int ready[2];
	pid_t pid;

	CHECK_OK(pipe(ready));
	on(SIGHUP, count);
	on(SIGCONT, count);
	pid = check_fork();
	if (pid == 0) {
		int r;

		close(m);
		setsid();
		r = open(name, O_RDWR);
		CHECK(r >= 0);
		CHECK_EQ(write(ready[1], "x", 1), 1);
		while (got[SIGHUP] == 0 || got[SIGCONT] == 0)
			check_sleep_ms(5);
		CHECK_ERR(open("/dev/tty", O_RDWR), ENXIO);
		check_child_exit();
	}
	CHECK_EQ(read(ready[0], &c, 1), 1);
	close(m);
	CHECK_CHILD(pid, "exited 0");
	on(SIGHUP, SIG_DFL);
	on(SIGCONT, SIG_DFL);
}

int main(int argc, char **argv)
{
	check_init(argc, argv);
	test_acquire();
	test_signals();
	test_background();
	test_foreground();
	test_hangup();
	return check_finish();
}
