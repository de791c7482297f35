/*
 * ipc_msg: System V message queues.
 *
 * Older daemons, batch systems and IPC test suites pass typed messages
 * through msgsnd and msgrcv. Checks: msgget with IPC_PRIVATE and a key
 * (ENOENT, EEXIST); IPC_STAT's counts (qnum, cbytes, qbytes as msgmnb,
 * lspid, lrpid, times); msgrcv takes messages in order, by type: 0 any,
 * a type that one, with MSG_EXCEPT any other, a negative type the lowest
 * up to it; a longer message is E2BIG and stays, unless MSG_NOERROR cuts
 * it; IPC_NOWAIT on an empty queue is ENOMSG; MSG_COPY copies the message
 * at a position and leaves it (EINVAL without IPC_NOWAIT or with
 * MSG_EXCEPT, ENOMSG past the end); msgsnd is EINVAL for a type below 1
 * or a size past msgmax; a full queue (its bytes, or its messages, past
 * qbytes, which IPC_SET lowers; raising it
 * past msgmnb needs CAP_SYS_RESOURCE) is EAGAIN with IPC_NOWAIT and
 * otherwise waits until a receiver makes room; a receiver waits for a
 * message of its type from another process; a signal ends a wait with
 * EINTR even with SA_RESTART; IPC_RMID wakes waiters with EIDRM; without
 * CAP_IPC_OWNER the mode binds the creator (EACCES); IPC_INFO and
 * MSG_INFO give /proc/sys/kernel's msgmax, msgmnb and msgmni, MSG_INFO
 * the messages in use, MSG_STAT_ANY takes an index; /proc/sysvipc/msg
 * lists the queue.
 */
// covers: msgget msgsnd msgrcv msgctl
#include "check.h"

#include <sys/ipc.h>
#include <sys/msg.h>

struct msg {
	long type;
	char text[64];
};

static long snd(int id, long type, const char *text, int flags)
{
	struct msg m = { type, "" };

	strncpy(m.text, text, sizeof(m.text) - 1);
	return msgsnd(id, &m, strlen(text), flags);
}

/* rcv receives into a buffer of size bytes and returns the text, or
 * "(errno name)". */
static const char *rcv(int id, size_t size, long type, int flags)
{
	static char out[80];
	struct msg m;
	long n;

	memset(&m, 0, sizeof(m));
	n = msgrcv(id, &m, size, type, flags);
	if (n < 0) {
		snprintf(out, sizeof(out), "(%s)", check_errname(errno));
		return out;
	}
	snprintf(out, sizeof(out), "%ld:%.*s", m.type, (int)n, m.text);
	return out;
}

static struct msqid_ds stat_of(int id)
{
	struct msqid_ds ds;

	memset(&ds, 0, sizeof(ds));
	CHECK_OK(msgctl(id, IPC_STAT, &ds));
	return ds;
}

static long read_long_file(const char *path)
{
	char buf[64] = "";
	int fd = open(path, O_RDONLY);

	if (fd < 0)
		return -1;
	if (read(fd, buf, sizeof(buf) - 1) < 0)
		buf[0] = '\0';
	close(fd);
	return strtol(buf, NULL, 10);
}

static void test_order_and_types(void)
{
	struct msqid_ds ds;
	time_t now = time(NULL);
	int id;

	id = CHECK_OK(msgget(IPC_PRIVATE, 0600));
	ds = stat_of(id);
	CHECK_EQ(ds.msg_qnum, 0);
	CHECK_EQ(ds.msg_qbytes, read_long_file("/proc/sys/kernel/msgmnb"));
	CHECK_EQ(ds.msg_perm.mode, 0600);
	CHECK_EQ(ds.msg_stime, 0);
	CHECK(ds.msg_ctime >= now - 1);

	CHECK_OK(snd(id, 3, "ccc", 0));
	CHECK_OK(snd(id, 1, "a", 0));
	CHECK_OK(snd(id, 2, "bb", 0));
	CHECK_OK(snd(id, 1, "a2", 0));
	ds = stat_of(id);
	CHECK_EQ(ds.msg_qnum, 4);
	CHECK_EQ(ds.__msg_cbytes, 8);
	CHECK_EQ(ds.msg_lspid, getpid());
	CHECK(ds.msg_stime >= now - 1);

	/* MSG_COPY leaves the message. */
	CHECK_STR(rcv(id, 64, 1, MSG_COPY | IPC_NOWAIT), "1:a");
	CHECK_STR(rcv(id, 64, 2, MSG_COPY | IPC_NOWAIT), "2:bb");
	CHECK_STR(rcv(id, 64, 4, MSG_COPY | IPC_NOWAIT), "(ENOMSG)");
	CHECK_STR(rcv(id, 64, 0, MSG_COPY), "(EINVAL)");
	CHECK_STR(rcv(id, 64, 0, MSG_COPY | IPC_NOWAIT | MSG_EXCEPT), "(EINVAL)");
	CHECK_EQ(stat_of(id).msg_qnum, 4);

	CHECK_STR(rcv(id, 64, 2, 0), "2:bb");
	CHECK_STR(rcv(id, 64, 3, MSG_EXCEPT), "1:a");
	CHECK_STR(rcv(id, 64, -2, 0), "1:a2");
	CHECK_STR(rcv(id, 64, 1, IPC_NOWAIT), "(ENOMSG)");
	CHECK_STR(rcv(id, 2, 0, 0), "(E2BIG)");
	CHECK_EQ(stat_of(id).msg_qnum, 1);
	CHECK_STR(rcv(id, 2, 0, MSG_NOERROR), "3:cc");
	ds = stat_of(id);
	CHECK_EQ(ds.msg_qnum, 0);
	CHECK_EQ(ds.__msg_cbytes, 0);
	CHECK_EQ(ds.msg_lrpid, getpid());
	CHECK_STR(rcv(id, 64, 0, IPC_NOWAIT), "(ENOMSG)");

	CHECK_ERR(snd(id, 0, "x", 0), EINVAL);
	CHECK_ERR(snd(id, -1, "x", 0), EINVAL);
	{
		static char big[8192 + 16];
		long max = read_long_file("/proc/sys/kernel/msgmax");
		CHECK_ERR(msgsnd(id, big, max + 1, 0), EINVAL);
	}
	CHECK_ERR(msgctl(id, 999, &ds), EINVAL);
	CHECK_ERR(msgctl(-1, IPC_STAT, &ds), EINVAL);
	CHECK_ERR(snd(-1, 1, "x", 0), EINVAL);
	CHECK_STR(rcv(id + 1000000, 64, 0, 0), "(EINVAL)");
	CHECK_OK(msgctl(id, IPC_RMID, NULL));
	CHECK_ERR(snd(id, 1, "x", 0), EINVAL);
}

static void test_keys_and_full_queue(void)
{
	int key = 0x6d700000 | (getpid() & 0xffff), id;
	struct msqid_ds ds;
	pid_t pid;

	CHECK_ERR(msgget(key, 0600), ENOENT);
	id = CHECK_OK(msgget(key, IPC_CREAT | 0600));
	CHECK_EQ(msgget(key, 0), id);
	CHECK_ERR(msgget(key, IPC_CREAT | IPC_EXCL), EEXIST);

	ds = stat_of(id);
	ds.msg_qbytes = 4;
	CHECK_OK(msgctl(id, IPC_SET, &ds));
	CHECK_EQ(stat_of(id).msg_qbytes, 4);
	CHECK_OK(snd(id, 1, "abc", 0));
	CHECK_ERR(snd(id, 1, "de", IPC_NOWAIT), EAGAIN);
	CHECK_OK(snd(id, 1, "d", 0)); /* 4 bytes fit */
	/* qbytes bounds the number of messages too. */
	CHECK_OK(snd(id, 2, "", IPC_NOWAIT));
	CHECK_OK(snd(id, 2, "", IPC_NOWAIT));
	CHECK_ERR(snd(id, 2, "", IPC_NOWAIT), EAGAIN);

	/* A sender waits for room. */
	pid = check_fork();
	if (pid == 0) {
		CHECK_OK(snd(id, 5, "ef", 0));
		check_child_exit();
	}
	check_sleep_ms(50);
	CHECK_EQ(stat_of(id).msg_qnum, 4);
	CHECK_STR(rcv(id, 64, 0, 0), "1:abc");
	CHECK_CHILD(pid, "exited 0");
	CHECK_STR(rcv(id, 64, 5, 0), "5:ef");

	ds = stat_of(id);
	ds.msg_qbytes = read_long_file("/proc/sys/kernel/msgmnb") + 1;
	if (check_has_cap(CAP_SYS_RESOURCE))
		CHECK_OK(msgctl(id, IPC_SET, &ds));
	else
		CHECK_ERR(msgctl(id, IPC_SET, &ds), EPERM);
	CHECK_OK(msgctl(id, IPC_RMID, NULL));
}

static void on_alarm(int sig)
{
	(void)sig;
}

static void test_waiting_receivers(void)
{
	struct sigaction sa;
	pid_t pid;
	int id;

	id = CHECK_OK(msgget(IPC_PRIVATE, 0600));
	pid = check_fork();
	if (pid == 0) {
		CHECK_STR(rcv(id, 64, 7, 0), "7:for the child");
		check_child_exit();
	}
	check_sleep_ms(20);
	CHECK_OK(snd(id, 6, "not this", 0));
	CHECK_OK(snd(id, 7, "for the child", 0));
	CHECK_CHILD(pid, "exited 0");
	CHECK_STR(rcv(id, 64, 0, IPC_NOWAIT), "6:not this");

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_alarm;
	sa.sa_flags = SA_RESTART;
	CHECK_OK(sigaction(SIGALRM, &sa, NULL));
	ualarm(50000, 0);
	CHECK_STR(rcv(id, 64, 0, 0), "(EINTR)");
	signal(SIGALRM, SIG_DFL);

	pid = check_fork();
	if (pid == 0) {
		CHECK_STR(rcv(id, 64, 0, 0), "(EIDRM)");
		check_child_exit();
	}
	check_sleep_ms(50);
	CHECK_OK(msgctl(id, IPC_RMID, NULL));
	CHECK_CHILD(pid, "exited 0");
}

static void test_perms_info(void)
{
	struct msqid_ds ds;
	struct msginfo mi;
	char line[256];
	int id, maxidx, i, found = 0;
	FILE *f;

	id = CHECK_OK(msgget(IPC_PRIVATE, 0200));
	CHECK_OK(snd(id, 1, "hello", 0));
	if (!check_has_cap(CAP_IPC_OWNER)) {
		CHECK_STR(rcv(id, 64, 0, IPC_NOWAIT), "(EACCES)");
		CHECK_ERR(msgctl(id, IPC_STAT, &ds), EACCES);
	}
	maxidx = CHECK_OK(msgctl(0, IPC_INFO, (struct msqid_ds *)&mi));
	CHECK_EQ(mi.msgmax, read_long_file("/proc/sys/kernel/msgmax"));
	CHECK_EQ(mi.msgmnb, read_long_file("/proc/sys/kernel/msgmnb"));
	CHECK_EQ(mi.msgmni, read_long_file("/proc/sys/kernel/msgmni"));
	CHECK_EQ(mi.msgssz, 16);
	CHECK_EQ(CHECK_OK(msgctl(0, MSG_INFO, (struct msqid_ds *)&mi)), maxidx);
	CHECK(mi.msgpool >= 1); /* queues in use */
	CHECK(mi.msgmap >= 1);  /* messages */
	CHECK(mi.msgtql >= 5);  /* their bytes */
	for (i = 0; i <= maxidx; i++)
		if (msgctl(i, MSG_STAT_ANY, &ds) == id) {
			found++;
			CHECK_EQ(ds.msg_qnum, 1);
		}
	CHECK_EQ(found, 1);

	found = 0;
	f = fopen("/proc/sysvipc/msg", "r");
	CHECK(f != NULL);
	if (f) {
		CHECK(fgets(line, sizeof(line), f) && strstr(line, "msqid") && strstr(line, "qnum"));
		while (fgets(line, sizeof(line), f)) {
			int key, qid, perms;
			unsigned long cbytes, qnum;
			if (sscanf(line, "%d %d %o %lu %lu", &key, &qid, &perms, &cbytes, &qnum) == 5 && qid == id) {
				found++;
				CHECK_EQ(perms, 0200);
				CHECK_EQ(cbytes, 5);
				CHECK_EQ(qnum, 1);
			}
		}
		fclose(f);
	}
	CHECK_EQ(found, 1);
	CHECK_OK(msgctl(id, IPC_RMID, NULL));
}

int main(int argc, char **argv)
{
	check_init(argc, argv);
	test_order_and_types();
	test_keys_and_full_queue();
	test_waiting_receivers();
	test_perms_info();
	return check_finish();
}
