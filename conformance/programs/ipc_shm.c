/*
 * ipc_shm: System V shared memory.
 *
 * PostgreSQL, X clients (MIT-SHM), test harnesses and older IPC code make
 * segments with shmget and attach them in several processes. Checks:
 * shmget with IPC_PRIVATE and with a key (the same id again, EEXIST with
 * IPC_EXCL, ENOENT without IPC_CREAT, EINVAL for a size of 0 or larger
 * than the segment's), IPC_STAT's fields (size, mode, creator and owner,
 * cpid, lpid, times, nattch); shmat maps it shared, page aligned, named
 * /SYSV<key> (deleted) in /proc/self/maps; a forked child shares it and
 * counts as an attach until it exits; shm_nattch counts mappings, so an
 * mprotect that splits one counts twice, and shmdt removes every piece;
 * shmat at an address (EINVAL unaligned unless SHM_RND rounds it, or over
 * a mapping unless SHM_REMAP; SHM_REMAP without an address is EINVAL);
 * SHM_RDONLY faults on write; IPC_SET changes the mode; IPC_RMID while
 * attached marks it SHM_DEST with key 0, the id still attaches, the key
 * makes a new segment, and the last shmdt frees it (IPC_STAT EINVAL);
 * SHM_LOCK and SHM_UNLOCK show in the mode; the creator without
 * CAP_IPC_OWNER is refused what the mode forbids (EACCES), SHM_STAT_ANY
 * is not; IPC_INFO's limits are /proc/sys/kernel's, SHM_INFO counts the
 * segment, SHM_STAT and SHM_STAT_ANY take an index and return the id;
 * /proc/sysvipc/shm lists it; EINVAL for bad ids, commands and shmdt
 * addresses.
 */
// covers: shmget shmat shmdt shmctl
#include "check.h"

#include <sched.h>
#include <stdint.h>
#include <sys/ipc.h>
#include <sys/mman.h>
#include <sys/shm.h>

#define PAGE 4096L
#define SEG_SIZE 5000 /* two pages, the last one in part */

static int key_of(int n)
{
	/* Keys of this process's own: natively the host's namespace may hold
	 * objects of others. */
	return 0x6d6f0000 | ((getpid() & 0xff) << 8) | n;
}

static struct shmid_ds stat_of(int id)
{
	struct shmid_ds ds;

	memset(&ds, 0, sizeof(ds));
	CHECK_OK(shmctl(id, IPC_STAT, &ds));
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
	return strtoul(buf, NULL, 10);
}

/* maps_has reports whether /proc/self/maps has a line containing both. */
static int maps_has(const char *a, const char *b)
{
	static char buf[65536];
	long n = 0, r;
	int fd = open("/proc/self/maps", O_RDONLY);
	char *line, *end;

	if (fd < 0)
		return 0;
	while ((r = read(fd, buf + n, sizeof(buf) - 1 - n)) > 0)
		n += r;
	close(fd);
	buf[n] = '\0';
	for (line = buf; *line; line = end + (*end == '\n')) {
		end = strchrnul(line, '\n');
		char save = *end;
		*end = '\0';
		int hit = strstr(line, a) && strstr(line, b);
		*end = save;
		if (hit)
			return 1;
	}
	return 0;
}

static void test_get(void)
{
	int key = key_of(1), id, id2;

	CHECK_ERR(shmget(key, 100, 0600), ENOENT);
	id = CHECK_OK(shmget(key, 100, IPC_CREAT | 0600));
	CHECK_EQ(shmget(key, 100, 0600), id);
	CHECK_EQ(shmget(key, 0, 0), id);
	CHECK_EQ(shmget(key, 50, IPC_CREAT | 0600), id);
	CHECK_ERR(shmget(key, 100, IPC_CREAT | IPC_EXCL | 0600), EEXIST);
	CHECK_ERR(shmget(key, 200, 0600), EINVAL);
	CHECK_ERR(shmget(IPC_PRIVATE, 0, IPC_CREAT | 0600), EINVAL);
	id2 = CHECK_OK(shmget(IPC_PRIVATE, 100, 0600));
	CHECK(id2 != id);
	CHECK_EQ(stat_of(id2).shm_perm.__key, IPC_PRIVATE);
	CHECK_OK(shmctl(id, IPC_RMID, NULL));
	CHECK_OK(shmctl(id2, IPC_RMID, NULL));
	CHECK_ERR(shmctl(id, IPC_STAT, &(struct shmid_ds){ 0 }), EINVAL);
}

static void test_attach(void)
{
	int id, fds[2];
	time_t now = time(NULL);
	struct shmid_ds ds;
	char *p, c;
	pid_t pid;

	id = CHECK_OK(shmget(IPC_PRIVATE, SEG_SIZE, 0640));
	ds = stat_of(id);
	CHECK_EQ(ds.shm_segsz, SEG_SIZE);
	CHECK_EQ(ds.shm_perm.mode, 0640);
	CHECK_EQ(ds.shm_perm.uid, geteuid());
	CHECK_EQ(ds.shm_perm.cuid, geteuid());
	CHECK_EQ(ds.shm_perm.gid, getegid());
	CHECK_EQ(ds.shm_cpid, getpid());
	CHECK_EQ(ds.shm_lpid, 0);
	CHECK_EQ(ds.shm_nattch, 0);
	CHECK_EQ(ds.shm_atime, 0);
	CHECK(ds.shm_ctime >= now - 1 && ds.shm_ctime <= time(NULL) + 1);

	p = (char *)CHECK_OK((long)shmat(id, NULL, 0));
	if (p == (char *)-1)
		return;
	CHECK_EQ((uintptr_t)p % PAGE, 0);
	CHECK(all_zero(p, 2 * PAGE));
	memset(p, 'a', SEG_SIZE);
	ds = stat_of(id);
	CHECK_EQ(ds.shm_nattch, 1);
	CHECK_EQ(ds.shm_lpid, getpid());
	CHECK(ds.shm_atime >= now - 1);
	CHECK(maps_has("rw-s", "/SYSV00000000 (deleted)"));

	/* A child shares the pages, and its copy of the mapping counts. */
	CHECK_OK(pipe(fds));
	pid = check_fork();
	if (pid == 0) {
		close(fds[1]);
		CHECK_EQ(p[0], 'a');
		p[1] = 'b';
		CHECK_EQ(stat_of(id).shm_nattch, 2);
		CHECK_EQ(read(fds[0], &c, 1), 0);
		check_child_exit();
	}
	close(fds[0]);
	while (p[1] != 'b')
		sched_yield();
	CHECK_EQ(stat_of(id).shm_nattch, 2);
	close(fds[1]);
	CHECK_CHILD(pid, "exited 0");
	CHECK_EQ(stat_of(id).shm_nattch, 1);

	/* Two mappings after a split; shmdt removes both. */
	CHECK_OK(mprotect(p, PAGE, PROT_READ));
	CHECK_EQ(stat_of(id).shm_nattch, 2);
	CHECK_ERR(shmdt(p + 1), EINVAL);
	CHECK_ERR(shmdt(p + PAGE), EINVAL);
	CHECK_OK(shmdt(p));
	CHECK_EQ(stat_of(id).shm_nattch, 0);
	CHECK_ERR(shmdt(p), EINVAL);
	CHECK(stat_of(id).shm_dtime >= now - 1);

	/* Attaches at an address. */
	p = mmap(NULL, 4 * PAGE, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(p != MAP_FAILED);
	CHECK_ERR((long)shmat(id, p, 0), EINVAL); /* over a mapping */
	CHECK_EQ((long)shmat(id, p, SHM_REMAP), (long)p);
	CHECK_EQ(p[SEG_SIZE - 1], 'a');
	CHECK_OK(shmdt(p));
	CHECK_OK(munmap(p, 4 * PAGE));
	CHECK_ERR((long)shmat(id, p + 1, 0), EINVAL);
	CHECK_EQ((long)shmat(id, p + 1, SHM_RND), (long)p);
	CHECK_OK(shmdt(p));
	CHECK_ERR((long)shmat(id, NULL, SHM_REMAP), EINVAL);

	/* Read-only: a write faults. */
	p = (char *)CHECK_OK((long)shmat(id, NULL, SHM_RDONLY));
	CHECK(maps_has("r--s", "/SYSV00000000 (deleted)"));
	CHECK_ERR(mprotect(p, PAGE, PROT_READ | PROT_WRITE), EACCES);
	pid = check_fork();
	if (pid == 0) {
		p[0] = 'x';
		check_child_exit();
	}
	CHECK_CHILD(pid, "killed by SIGSEGV");
	CHECK_EQ(p[0], 'a');
	CHECK_OK(shmdt(p));
	CHECK_ERR(shmctl(id, 999, &ds), EINVAL);
	CHECK_ERR(shmctl(-1, IPC_STAT, &ds), EINVAL);
	CHECK_ERR(shmctl(id + 1000000, IPC_STAT, &ds), EINVAL);
	CHECK_ERR((long)shmat(-1, NULL, 0), EINVAL);
	CHECK_OK(shmctl(id, IPC_RMID, NULL));
}

static void test_remove_while_attached(void)
{
	int key = key_of(2), id, id2;
	struct shmid_ds ds;
	char *p, *q;

	id = CHECK_OK(shmget(key, PAGE, IPC_CREAT | 0600));
	p = (char *)CHECK_OK((long)shmat(id, NULL, 0));
	p[0] = 'z';
	CHECK_OK(shmctl(id, IPC_RMID, NULL));
	ds = stat_of(id);
	CHECK_EQ(ds.shm_perm.mode, 01000 | 0600); /* SHM_DEST */
	CHECK_EQ(ds.shm_perm.__key, IPC_PRIVATE);
	CHECK_EQ(ds.shm_nattch, 1);
	/* Linux lets the id attach still; the key is free for a new one. */
	q = (char *)CHECK_OK((long)shmat(id, NULL, 0));
	CHECK_EQ(q[0], 'z');
	CHECK_EQ(stat_of(id).shm_nattch, 2);
	id2 = CHECK_OK(shmget(key, PAGE, IPC_CREAT | IPC_EXCL | 0600));
	CHECK(id2 != id);
	CHECK_OK(shmdt(q));
	CHECK_OK(shmdt(p));
	CHECK_ERR(shmctl(id, IPC_STAT, &ds), EINVAL);
	CHECK_ERR((long)shmat(id, NULL, 0), EINVAL);
	CHECK_OK(shmctl(id2, IPC_RMID, NULL));
}

static void test_set_lock_perms(void)
{
	int owner = check_has_cap(CAP_IPC_OWNER);
	struct shmid_ds ds;
	int id;

	id = CHECK_OK(shmget(IPC_PRIVATE, PAGE, 0600));
	ds = stat_of(id);
	ds.shm_perm.mode = 0444;
	CHECK_OK(shmctl(id, IPC_SET, &ds));
	CHECK_EQ(stat_of(id).shm_perm.mode, 0444);
	ds.shm_perm.uid = (uid_t)-1;
	CHECK_ERR(shmctl(id, IPC_SET, &ds), EINVAL);

	CHECK_OK(shmctl(id, SHM_LOCK, NULL));
	CHECK_EQ(stat_of(id).shm_perm.mode, 02000 | 0444); /* SHM_LOCKED */
	CHECK_OK(shmctl(id, SHM_UNLOCK, NULL));
	CHECK_EQ(stat_of(id).shm_perm.mode, 0444);

	/* The mode binds the creator too, but for CAP_IPC_OWNER. */
	if (owner) {
		char *p = (char *)CHECK_OK((long)shmat(id, NULL, 0));

		CHECK_OK(shmdt(p));
	} else {
		char *p;

		CHECK_ERR((long)shmat(id, NULL, 0), EACCES);
		p = (char *)CHECK_OK((long)shmat(id, NULL, SHM_RDONLY));
		CHECK_OK(shmdt(p));
	}
	ds.shm_perm.uid = geteuid();
	ds.shm_perm.mode = 0;
	CHECK_OK(shmctl(id, IPC_SET, &ds));
	if (!owner) {
		CHECK_ERR(shmctl(id, IPC_STAT, &ds), EACCES);
		CHECK_ERR((long)shmat(id, NULL, SHM_RDONLY), EACCES);
		CHECK_EQ(shmctl(0, SHM_STAT_ANY, &ds) != -1 || errno == EINVAL, 1);
	}
	CHECK_OK(shmctl(id, IPC_RMID, NULL));
}

static void test_info(void)
{
	struct shminfo si;
	struct shm_info su;
	struct shmid_ds ds;
	int id, maxidx, i, found = 0;
	char line[256];
	FILE *f;

	id = CHECK_OK(shmget(IPC_PRIVATE, SEG_SIZE, 0600));
	maxidx = CHECK_OK(shmctl(0, IPC_INFO, (struct shmid_ds *)&si));
	CHECK_EQ(si.shmmax, read_long_file("/proc/sys/kernel/shmmax"));
	CHECK_EQ(si.shmall, read_long_file("/proc/sys/kernel/shmall"));
	CHECK_EQ(si.shmmni, read_long_file("/proc/sys/kernel/shmmni"));
	CHECK_EQ(si.shmmin, 1);
	CHECK_EQ(CHECK_OK(shmctl(0, SHM_INFO, (struct shmid_ds *)&su)), maxidx);
	CHECK(su.used_ids >= 1);
	CHECK(su.shm_tot >= 2);
	for (i = 0; i <= maxidx; i++) {
		int r = shmctl(i, SHM_STAT_ANY, &ds);
		if (r == id) {
			found++;
			CHECK_EQ(ds.shm_segsz, SEG_SIZE);
			CHECK_EQ(shmctl(i, SHM_STAT, &ds), id);
		}
	}
	CHECK_EQ(found, 1);
	CHECK_ERR(shmctl(maxidx + 1, SHM_STAT, &ds), EINVAL);

	found = 0;
	f = fopen("/proc/sysvipc/shm", "r");
	CHECK(f != NULL);
	if (f) {
		CHECK(fgets(line, sizeof(line), f) != NULL);
		CHECK(strstr(line, "key") && strstr(line, "shmid") && strstr(line, "nattch"));
		while (fgets(line, sizeof(line), f)) {
			int key, sid, perms;
			unsigned long size;
			if (sscanf(line, "%d %d %o %lu", &key, &sid, &perms, &size) == 4 && sid == id) {
				found++;
				CHECK_EQ(key, 0);
				CHECK_EQ(perms, 0600);
				CHECK_EQ(size, SEG_SIZE);
			}
		}
		fclose(f);
	}
	CHECK_EQ(found, 1);
	CHECK_OK(shmctl(id, IPC_RMID, NULL));
}

int main(int argc, char **argv)
{
	check_init(argc, argv);
	test_get();
	test_attach();
	test_remove_while_attached();
	test_set_lock_perms();
	test_info();
	return check_finish();
}
