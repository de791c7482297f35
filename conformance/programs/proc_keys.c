/*
 * proc_keys: keys and keyrings (add_key, request_key, keyctl).
 *
 * Kerberos (KEYRING ccaches), ecryptfs, NFS id mapping, systemd's
 * credentials and `keyctl` keep secrets in the kernel's keyrings; in a
 * sandbox they must find keyrings of their own and the usual answers.
 * Checks: after joining a new anonymous session keyring, the session,
 * process and thread keyrings are made on first use (GET_KEYRING_ID with
 * create; ENOKEY without for thread and process), their descriptions
 * "_ses", "_pid", "_tid"; a new thread gets a thread keyring of its own
 * and shares the process keyring; a forked child has neither but the
 * session keyring, and exec drops the thread and process keyrings it
 * made and keeps the session keyring; add_key of a "user" key returns a serial, READ
 * gives its payload, DESCRIBE "user;uid;gid;perm;desc" (the whole length
 * returned, with the NUL, and nothing copied into a buffer too small for
 * it, as for READ); adding the same type and description again
 * updates it in place (same serial), UPDATE too; SEARCH and request_key
 * find it through the session keyring, and a keyring linked inside;
 * READ of a keyring lists its serials; a "logon" key is not readable
 * (EOPNOTSUPP) and needs "service:" in its description (EINVAL); UNLINK
 * takes a key out (ENOENT the second time), LINK puts it back; REVOKE
 * makes it EKEYREVOKED; CLEAR empties a keyring; EINVAL for a keyring
 * with a payload, a user key without one and an empty description; ENODEV
 * for an unknown type, EPERM for a '.' type; ENOTDIR for a key used as a
 * keyring; ENOKEY for a serial that is none; EFAULT for a bad type or
 * payload; EOPNOTSUPP for an unknown operation.
 */
// covers: add_key request_key keyctl
#include "check.h"

#include <pthread.h>
#include <stdint.h>

#define KEYCTL_GET_KEYRING_ID 0
#define KEYCTL_JOIN_SESSION_KEYRING 1
#define KEYCTL_UPDATE 2
#define KEYCTL_REVOKE 3
#define KEYCTL_DESCRIBE 6
#define KEYCTL_CLEAR 7
#define KEYCTL_LINK 8
#define KEYCTL_UNLINK 9
#define KEYCTL_SEARCH 10
#define KEYCTL_READ 11
#define THREAD -1
#define PROCESS -2
#define SESSION -3

static long add_key(const char *type, const char *desc, const void *p, size_t n, long ring)
{
	return syscall(SYS_add_key, type, desc, p, n, ring);
}

static long keyctl(int op, unsigned long a, unsigned long b, unsigned long c, unsigned long d)
{
	return syscall(SYS_keyctl, op, a, b, c, d);
}

/* describe returns the key's description's last field (after ';'). */
static const char *describe(long id, char *buf, size_t n)
{
	long r = keyctl(KEYCTL_DESCRIBE, id, (uintptr_t)buf, n, 0);
	char *semi;

	if (r < 0)
		return check_errname(errno);
	semi = strrchr(buf, ';');
	return semi ? semi + 1 : buf;
}

static long thread_seen[2];

static void *thread_main(void *arg)
{
	(void)arg;
	thread_seen[0] = keyctl(KEYCTL_GET_KEYRING_ID, THREAD, 0, 0, 0);
	thread_seen[1] = keyctl(KEYCTL_GET_KEYRING_ID, PROCESS, 0, 0, 0);
	return NULL;
}

/* after_exec runs in the program exec'd by a child that had thread and
 * process keyrings: both are gone, the session keyring stays. */
static int after_exec(const char *ses)
{
	CHECK_ERR(keyctl(KEYCTL_GET_KEYRING_ID, THREAD, 0, 0, 0), ENOKEY);
	CHECK_ERR(keyctl(KEYCTL_GET_KEYRING_ID, PROCESS, 0, 0, 0), ENOKEY);
	CHECK_EQ(keyctl(KEYCTL_GET_KEYRING_ID, SESSION, 0, 0, 0), atol(ses));
	return check_finish();
}

int main(int argc, char **argv)
{
	char buf[256], want[64];
	long ses, proc, thr, key, key2, ring, logon, r;
	int32_t ids[4];
	pthread_t th;
	pid_t pid;

	check_init(argc, argv);
	if (getenv("PROC_KEYS_SESSION"))
		return after_exec(getenv("PROC_KEYS_SESSION"));
	ses = CHECK_OK(keyctl(KEYCTL_JOIN_SESSION_KEYRING, 0, 0, 0, 0));
	CHECK_EQ(keyctl(KEYCTL_GET_KEYRING_ID, SESSION, 0, 0, 0), ses);
	CHECK_STR(describe(ses, buf, sizeof(buf)), "_ses");
	CHECK_ERR(keyctl(KEYCTL_GET_KEYRING_ID, THREAD, 0, 0, 0), ENOKEY);
	CHECK_ERR(keyctl(KEYCTL_GET_KEYRING_ID, PROCESS, 0, 0, 0), ENOKEY);
	thr = CHECK_OK(keyctl(KEYCTL_GET_KEYRING_ID, THREAD, 1, 0, 0));
	proc = CHECK_OK(keyctl(KEYCTL_GET_KEYRING_ID, PROCESS, 1, 0, 0));
	CHECK_STR(describe(thr, buf, sizeof(buf)), "_tid");
	CHECK_STR(describe(proc, buf, sizeof(buf)), "_pid");
	CHECK(thr != proc && proc != ses);

	/* A new thread of a task with a thread keyring gets its own; it
	 * shares the process keyring. */
	CHECK_EQ(pthread_create(&th, NULL, thread_main, NULL), 0);
	pthread_join(th, NULL);
	CHECK(thread_seen[0] > 0 && thread_seen[0] != thr);
	CHECK_EQ(thread_seen[1], proc);

	/* A forked child has neither; exec drops them, keeps the session's. */
	pid = check_fork();
	if (pid == 0) {
		char env[64], *args[] = { argv[0], argv[1], argv[2], NULL }, *envp[] = { env, NULL };

		CHECK_ERR(keyctl(KEYCTL_GET_KEYRING_ID, THREAD, 0, 0, 0), ENOKEY);
		CHECK_ERR(keyctl(KEYCTL_GET_KEYRING_ID, PROCESS, 0, 0, 0), ENOKEY);
		CHECK_EQ(keyctl(KEYCTL_GET_KEYRING_ID, SESSION, 0, 0, 0), ses);
		CHECK_OK(keyctl(KEYCTL_GET_KEYRING_ID, THREAD, 1, 0, 0));
		CHECK_OK(keyctl(KEYCTL_GET_KEYRING_ID, PROCESS, 1, 0, 0));
		snprintf(env, sizeof(env), "PROC_KEYS_SESSION=%ld", ses);
		if (check_failures == 0)
			execve("/proc/self/exe", args, envp);
		check_fail(__FILE__, __LINE__, "execve: %s", check_errname(errno));
		check_child_exit();
	}
	CHECK_CHILD(pid, "exited 0");

	key = CHECK_OK(add_key("user", "conf:one", "secret", 6, SESSION));
	r = keyctl(KEYCTL_READ, key, (uintptr_t)buf, sizeof(buf), 0);
	CHECK_EQ(r, 6);
	CHECK_MEM(buf, "secret", 6);
	r = keyctl(KEYCTL_DESCRIBE, key, (uintptr_t)buf, sizeof(buf), 0);
	snprintf(want, sizeof(want), "user;%d;%d;", (int)geteuid(), (int)getegid());
	CHECK_EQ(strncmp(buf, want, strlen(want)), 0);
	CHECK_STR(describe(key, buf, sizeof(buf)), "conf:one");
	CHECK_EQ(r, (long)strlen(buf) + 1);
	CHECK_EQ(keyctl(KEYCTL_DESCRIBE, key, 0, 0, 0), r);
	/* A buffer too small gets nothing, and the length. */
	memset(buf, 'x', sizeof(buf));
	CHECK_EQ(keyctl(KEYCTL_DESCRIBE, key, (uintptr_t)buf, 4, 0), r);
	CHECK_EQ(buf[0], 'x');
	CHECK_EQ(keyctl(KEYCTL_READ, key, (uintptr_t)buf, 3, 0), 6);
	CHECK_EQ(buf[0], 'x');
	/* Again: updated in place. */
	CHECK_EQ(add_key("user", "conf:one", "other!", 6, SESSION), key);
	CHECK_EQ(keyctl(KEYCTL_READ, key, (uintptr_t)buf, sizeof(buf), 0), 6);
	CHECK_MEM(buf, "other!", 6);
	CHECK_EQ(keyctl(KEYCTL_UPDATE, key, (uintptr_t)"v3", 2, 0), 0);
	CHECK_EQ(keyctl(KEYCTL_READ, key, (uintptr_t)buf, sizeof(buf), 0), 2);
	CHECK_MEM(buf, "v3", 2);

	CHECK_EQ(keyctl(KEYCTL_SEARCH, SESSION, (uintptr_t)"user", (uintptr_t)"conf:one", 0), key);
	CHECK_EQ(syscall(SYS_request_key, "user", "conf:one", NULL, 0), key);
	CHECK_ERR(syscall(SYS_request_key, "user", "conf:none", NULL, 0), ENOKEY);
	CHECK_ERR(keyctl(KEYCTL_SEARCH, SESSION, (uintptr_t)"user", (uintptr_t)"conf:none", 0), ENOKEY);

	/* A keyring in the session keyring, with a key in it. */
	ring = CHECK_OK(add_key("keyring", "inner", NULL, 0, SESSION));
	key2 = CHECK_OK(add_key("user", "conf:two", "2", 1, ring));
	CHECK_EQ(keyctl(KEYCTL_SEARCH, SESSION, (uintptr_t)"user", (uintptr_t)"conf:two", 0), key2);
	CHECK_EQ(syscall(SYS_request_key, "user", "conf:two", NULL, 0), key2);
	CHECK_EQ(keyctl(KEYCTL_READ, SESSION, (uintptr_t)ids, sizeof(ids), 0), 8);
	CHECK_EQ(ids[0], key);
	CHECK_EQ(ids[1], ring);
	CHECK_EQ(keyctl(KEYCTL_READ, ring, 0, 0, 0), 4);

	/* logon keys: never read back. */
	logon = CHECK_OK(add_key("logon", "svc:pw", "hidden", 6, SESSION));
	CHECK_ERR(keyctl(KEYCTL_READ, logon, (uintptr_t)buf, sizeof(buf), 0), EOPNOTSUPP);
	CHECK_ERR(add_key("logon", "nocolon", "x", 1, SESSION), EINVAL);

	/* Unlink, link, revoke, clear. */
	CHECK_EQ(keyctl(KEYCTL_UNLINK, key2, ring, 0, 0), 0);
	CHECK_ERR(keyctl(KEYCTL_UNLINK, key2, ring, 0, 0), ENOENT);
	CHECK_ERR(keyctl(KEYCTL_SEARCH, SESSION, (uintptr_t)"user", (uintptr_t)"conf:two", 0), ENOKEY);
	CHECK_EQ(keyctl(KEYCTL_LINK, key, proc, 0, 0), 0);
	CHECK_EQ(keyctl(KEYCTL_SEARCH, PROCESS, (uintptr_t)"user", (uintptr_t)"conf:one", 0), key);
	CHECK_EQ(keyctl(KEYCTL_REVOKE, key, 0, 0, 0), 0);
	CHECK_ERR(keyctl(KEYCTL_READ, key, (uintptr_t)buf, sizeof(buf), 0), EKEYREVOKED);
	CHECK_ERR(keyctl(KEYCTL_DESCRIBE, key, (uintptr_t)buf, sizeof(buf), 0), EKEYREVOKED);
	CHECK_EQ(keyctl(KEYCTL_CLEAR, ring, 0, 0, 0), 0);
	CHECK_EQ(keyctl(KEYCTL_READ, ring, 0, 0, 0), 0);

	/* Errors. */
	CHECK_ERR(add_key("keyring", "bad", "x", 1, SESSION), EINVAL);
	CHECK_ERR(add_key("user", "nopayload", NULL, 0, SESSION), EINVAL);
	CHECK_ERR(add_key("user", "", "x", 1, SESSION), EINVAL);
	CHECK_ERR(add_key("no_such_type", "d", "x", 1, SESSION), ENODEV);
	CHECK_ERR(add_key(".builtin", "d", "x", 1, SESSION), EPERM);
	CHECK_ERR(add_key("user", "d", "x", 1, logon), ENOTDIR);
	CHECK_ERR(add_key("user", "d", "x", 1, 12345), ENOKEY);
	CHECK_ERR(add_key((const char *)8, "d", "x", 1, SESSION), EFAULT);
	CHECK_ERR(add_key("user", "d", (const void *)8, 1, SESSION), EFAULT);
	CHECK_ERR(keyctl(KEYCTL_READ, 12345, (uintptr_t)buf, sizeof(buf), 0), ENOKEY);
	CHECK_ERR(keyctl(9999, 0, 0, 0, 0), EOPNOTSUPP);
	return check_finish();
}
