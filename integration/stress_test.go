package integration

import (
	"strings"
	"testing"
	"time"
)

// TestForkTenThousand: a guest that forks, and reaps, 10,000 children one
// after another gets through them all; the stubs of exited children do not
// pile up.
func TestForkTenThousand(t *testing.T) {
	e := newEnv(t)
	e.buildProgram("forks", `#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>
int main(void) {
	int n;
	for (n = 0; n < 10000; n++) {
		int st;
		pid_t p = fork();
		if (p < 0) break;
		if (p == 0) _exit(n & 0x7f);
		if (waitpid(p, &st, 0) != p || !WIFEXITED(st) || WEXITSTATUS(st) != (n & 0x7f)) break;
	}
	printf("%d\n", n);
	return 0;
}`)
	e.config("/bin/forks")
	out, errOut, code := e.moatCmd("run", "--bundle", e.bundle, "forks1")
	if code != 0 || strings.TrimSpace(out) != "10000" {
		t.Fatalf("exit %d, output %q, want 10000 (%s)", code, out, errOut)
	}
	e.checkClean()
}

// TestSpinningThreads: 64 guest threads spinning in user code do not stop
// the sandbox's other thread from being served (its sleeps end, if late:
// every one of its system calls is a hand-off between host threads, which
// compete with the 64), and the process ends at once when its main thread
// exits. The bound is for liveness, not speed: runc's worst case here is
// tens of milliseconds, moat's hundreds.
func TestSpinningThreads(t *testing.T) {
	e := newEnv(t)
	e.buildProgram("spin", `#include <pthread.h>
#include <stdio.h>
#include <time.h>
static void *spin(void *arg) { for (volatile unsigned long i = 0;; i++) ; return arg; }
static long long now(void) {
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}
int main(void) {
	pthread_t th;
	for (int i = 0; i < 64; i++)
		if (pthread_create(&th, NULL, spin, NULL) != 0) { puts("pthread_create failed"); return 1; }
	long long worst = 0;
	for (int i = 0; i < 10; i++) {
		struct timespec d = {0, 20000000};
		long long t0 = now();
		nanosleep(&d, NULL);
		long long late = now() - t0 - 20000000;
		if (late > worst) worst = late;
	}
	printf("worst oversleep %lld ms\n", worst / 1000000);
	return worst < 3000000000LL ? 0 : 1;
}`)
	e.config("/bin/spin")
	start := time.Now()
	out, errOut, code := e.moatCmd("run", "--bundle", e.bundle, "spin1")
	if code != 0 {
		t.Fatalf("exit %d after %v: %s%s", code, time.Since(start), out, errOut)
	}
	t.Logf("%s in %v", strings.TrimSpace(out), time.Since(start))
	e.checkClean()
}
