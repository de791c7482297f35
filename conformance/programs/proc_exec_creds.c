/*
 * proc_exec_creds: the ids and capabilities a program runs with after execve.
 *
 * A container's program is exec'd by its runtime, and every program a shell or
 * sudo starts goes through execve, whose rules decide what it may do: a
 * non-root program keeps only its ambient capabilities, root gets its
 * bounding set, set-user-ID and set-group-ID files change the effective ids
 * (unless their mount is nosuid or no_new_privs is set), and such a program is
 * told AT_SECURE.
 * The program execs a copy of itself (argv[1] "--report") in forked children;
 * the copy writes its ids, capability sets and AT_SECURE to REPORT_FD.
 * Checks: root's exec makes CapEff = CapPrm = CapBnd | CapInh; a uid that
 * kept capabilities through setresuid (PR_SET_KEEPCAPS) loses them at exec;
 * an ambient capability survives it in permitted and effective; a
 * set-user-ID/set-group-ID copy owned by 1000:2000 run by uid 4000 gives
 * euid 1000 and egid 2000 (saved ids too) and AT_SECURE, unless /tmp is
 * nosuid or no_new_privs is set (then nothing changes and AT_SECURE is 0);
 * S_ISGID without group execute changes nothing.
 */
// covers: execve
// capabilities: CAP_CHOWN CAP_FOWNER CAP_FSETID CAP_SETUID CAP_SETGID CAP_SETPCAP CAP_KILL
#include "check.h"

#include <linux/capability.h>
#include <sys/auxv.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>

#define REPORT_FD 100
#define COPY "/tmp/proc_exec_creds.copy"

struct report {
	unsigned ruid, euid, suid, rgid, egid, sgid;
	unsigned long long eff, prm, inh, amb, bnd;
	unsigned long secure;
};

static unsigned long long status_hex(const char *name)
{
	return strtoull(proc_status(name), NULL, 16);
}

/* report is the copy's whole life: it says what it runs with. */
static int report(void)
{
	struct report r;

	getresuid(&r.ruid, &r.euid, &r.suid);
	getresgid(&r.rgid, &r.egid, &r.sgid);
	r.eff = status_hex("CapEff");
	r.prm = status_hex("CapPrm");
	r.inh = status_hex("CapInh");
	r.amb = status_hex("CapAmb");
	r.bnd = status_hex("CapBnd");
	r.secure = getauxval(AT_SECURE);
	return write(REPORT_FD, &r, sizeof(r)) == sizeof(r) ? 0 : 3;
}

/* run forks, lets prepare change the child, execs path in it and returns
 * what it reported. */
static struct report run(const char *path, void (*prepare)(void))
{
	struct report r;
	int fds[2];
	pid_t pid;

	memset(&r, 0xff, sizeof(r));
	if (pipe(fds) != 0) {
		CHECK(!"pipe");
		return r;
	}
	pid = check_fork();
	if (pid == 0) {
		char *argv[] = { (char *)path, "--report", NULL };

		close(fds[0]);
		if (dup2(fds[1], REPORT_FD) < 0)
			_exit(4);
		prepare();
		execve(path, argv, (char *[]){ NULL });
		_exit(5);
	}
	close(fds[1]);
	CHECK_EQ(read(fds[0], &r, sizeof(r)), (long)sizeof(r));
	close(fds[0]);
	CHECK_CHILD(pid, "exited 0");
	return r;
}

static void set_caps(unsigned long long eff, unsigned long long prm, unsigned long long inh)
{
	struct __user_cap_header_struct hdr = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct data[2] = {
		{ (unsigned)eff, (unsigned)prm, (unsigned)inh },
		{ (unsigned)(eff >> 32), (unsigned)(prm >> 32), (unsigned)(inh >> 32) },
	};

	if (syscall(SYS_capget, &hdr, NULL) != 0 || syscall(SYS_capset, &hdr, data) != 0)
		_exit(6);
}

#define BIT(cap) (1ULL << (cap))

/* As root, the effective set emptied: the exec gives it back. */
static void drop_effective(void)
{
	set_caps(0, status_hex("CapPrm"), 0);
}

/* Uid 4000 keeping its permitted capabilities through setresuid. */
static void become_4000_keeping_caps(void)
{
	unsigned long long prm = status_hex("CapPrm");

	if (prctl(PR_SET_KEEPCAPS, 1) != 0 || setresgid(3000, 3000, 3000) != 0 ||
	    setresuid(4000, 4000, 4000) != 0)
		_exit(7);
	set_caps(prm, prm, 0);
}

/* Uid 4000 with CAP_KILL ambient. */
static void become_4000_with_ambient_kill(void)
{
	unsigned long long prm = status_hex("CapPrm");

	if (prctl(PR_SET_KEEPCAPS, 1) != 0 || setresgid(3000, 3000, 3000) != 0 ||
	    setresuid(4000, 4000, 4000) != 0)
		_exit(7);
	set_caps(prm, prm, BIT(CAP_KILL));
	if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE, CAP_KILL, 0, 0) != 0)
		_exit(8);
}

/* Uid 4000 with no capabilities at all. */
static void become_4000(void)
{
	if (setresgid(3000, 3000, 3000) != 0 || setresuid(4000, 4000, 4000) != 0)
		_exit(7);
}

static void become_4000_no_new_privs(void)
{
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
		_exit(9);
	become_4000();
}

static void test_capabilities(void)
{
	struct report r;

	r = run(COPY, drop_effective);
	CHECK_EQ(r.ruid, 0u);
	CHECK_EQ(r.prm, r.bnd | r.inh);
	CHECK_EQ(r.eff, r.prm);
	CHECK_EQ(r.secure, 0ul);

	r = run(COPY, become_4000_keeping_caps);
	CHECK_EQ(r.ruid, 4000u);
	CHECK_EQ(r.euid, 4000u);
	CHECK_EQ(r.prm, 0ull);
	CHECK_EQ(r.eff, 0ull);

	r = run(COPY, become_4000_with_ambient_kill);
	CHECK_EQ(r.amb, BIT(CAP_KILL));
	CHECK_EQ(r.prm, BIT(CAP_KILL));
	CHECK_EQ(r.eff, BIT(CAP_KILL));
	CHECK_EQ(r.inh, BIT(CAP_KILL));
	CHECK_EQ(r.secure, 0ul);
}

static void test_set_ids(void)
{
	struct statvfs vfs;
	struct report r;
	int honoured;

	CHECK_OK(chown(COPY, 1000, 2000));
	CHECK_OK(chmod(COPY, 06755));
	CHECK_OK(statvfs("/tmp", &vfs));
	honoured = !(vfs.f_flag & ST_NOSUID) && strcmp(proc_status("NoNewPrivs"), "0") == 0;

	r = run(COPY, become_4000);
	CHECK_EQ(r.ruid, 4000u);
	CHECK_EQ(r.euid, honoured ? 1000u : 4000u);
	CHECK_EQ(r.suid, honoured ? 1000u : 4000u);
	CHECK_EQ(r.rgid, 3000u);
	CHECK_EQ(r.egid, honoured ? 2000u : 3000u);
	CHECK_EQ(r.sgid, honoured ? 2000u : 3000u);
	CHECK_EQ(r.secure, honoured ? 1ul : 0ul);
	CHECK_EQ(r.prm, 0ull);

	/* no_new_privs: the bits count for nothing. */
	r = run(COPY, become_4000_no_new_privs);
	CHECK_EQ(r.euid, 4000u);
	CHECK_EQ(r.egid, 3000u);
	CHECK_EQ(r.secure, 0ul);

	/* Set-group-ID without group execute marks mandatory locking. */
	CHECK_OK(chmod(COPY, 02745));
	r = run(COPY, become_4000);
	CHECK_EQ(r.egid, 3000u);
	CHECK_EQ(r.sgid, 3000u);
}

static int copy_self(void)
{
	char buf[65536];
	int in, out;
	long n;

	in = open("/proc/self/exe", O_RDONLY);
	out = open(COPY, O_WRONLY | O_CREAT | O_TRUNC, 0755);
	if (in < 0 || out < 0)
		return -1;
	while ((n = read(in, buf, sizeof(buf))) > 0)
		if (write(out, buf, n) != n)
			return -1;
	close(in);
	close(out);
	return n == 0 ? chmod(COPY, 0755) : -1;
}

int main(int argc, char **argv)
{
	if (argc == 2 && strcmp(argv[1], "--report") == 0)
		return report();
	check_init(argc, argv);
	if (!check_has_cap(CAP_SETUID) || !check_has_cap(CAP_CHOWN)) {
		/* Not root natively: nothing to check here. */
		CHECK(!check_native || !"run natively as root");
		return check_finish();
	}
	CHECK_OK(copy_self());
	test_capabilities();
	test_set_ids();
	unlink(COPY);
	return check_finish();
}
