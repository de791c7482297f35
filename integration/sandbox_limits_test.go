package integration

import (
	"bufio"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// The limits the sentry enforces itself, from linux.resources: memory.max
// with an OOM killer inside the sandbox, pids.max, and the figures the
// guest reads of them. (The host cgroup around the sandbox is the CLI's,
// tested with it.)

// memoryBomb touches up to 1 GiB a MiB at a time, in a child unless
// "self" is its argument, and tells its parent how far it got.
const memoryBomb = `#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
static double now_ms(void) {
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}
static void bomb(int out) {
	char *p = mmap(0, 1 << 30, PROT_READ|PROT_WRITE, MAP_PRIVATE|MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED) { perror("mmap"); _exit(2); }
	for (int mib = 1; mib <= 1024; mib++) {
		memset(p + (long)(mib - 1) * (1 << 20), 1, 1 << 20);
		if (out >= 0) write(out, &mib, sizeof mib);
	}
}
int main(int argc, char **argv) {
	if (argc > 1 && strcmp(argv[1], "self") == 0) {
		bomb(-1);
		printf("allocated 1 GiB\n");
		return 0;
	}
	int fds[2];
	pipe(fds);
	double start = now_ms();
	pid_t pid = fork();
	if (pid == 0) { close(fds[0]); bomb(fds[1]); _exit(0); }
	close(fds[1]);
	int mib = 0, last = 0;
	while (read(fds[0], &mib, sizeof mib) == sizeof mib) last = mib;
	int st;
	waitpid(pid, &st, 0);
	fprintf(stderr, "%.0f ms from fork to the child's end\n", now_ms() - start);
	if (WIFSIGNALED(st)) printf("child killed by signal %d after %d MiB\n", WTERMSIG(st), last);
	else printf("child exited %d after %d MiB\n", WEXITSTATUS(st), last);
	return 0;
}`

// limitsSpec is a config running args with resources r, /proc and a
// cgroup2 mount at /sys/fs/cgroup.
func limitsSpec(r *specs.LinuxResources, args ...string) specs.Spec {
	return specs.Spec{
		Version:  specs.Version,
		Process:  &specs.Process{Args: args, Env: []string{"PATH=/bin"}, Cwd: "/"},
		Root:     &specs.Root{Path: "rootfs", Readonly: true},
		Hostname: "moat-integration",
		Mounts: []specs.Mount{
			{Destination: "/proc", Type: "proc", Source: "proc"},
			{Destination: "/sys", Type: "sysfs", Source: "sysfs", Options: []string{"ro"}},
			{Destination: "/sys/fs/cgroup", Type: "cgroup", Source: "cgroup", Options: []string{"ro"}},
		},
		Linux: &specs.Linux{Resources: r},
	}
}

func memoryLimit(n int64) *specs.LinuxResources {
	return &specs.LinuxResources{Memory: &specs.LinuxMemory{Limit: &n}}
}

// TestMemoryLimitKillsTheChildThatAllocatesPastIt: under a 100 MiB limit
// a child touching 1 GiB is killed by SIGKILL before it gets far past the
// limit; its parent, init, lives on and the container exits 0.
func TestMemoryLimitKillsTheChildThatAllocatesPastIt(t *testing.T) {
	e := newEnv(t)
	e.buildProgram("bomb", memoryBomb)
	e.writeSpec(limitsSpec(memoryLimit(100<<20), "/bin/bomb"))
	start := time.Now()
	out, errOut, code := e.moatCmd("run", "--bundle", e.bundle, "oomchild")
	took := time.Since(start)
	if code != 0 {
		t.Fatalf("exit %d (%s)", code, errOut)
	}
	m := regexp.MustCompile(`^child killed by signal 9 after (\d+) MiB$`).FindStringSubmatch(strings.TrimSpace(out))
	if m == nil {
		t.Fatalf("guest printed %q, want its child killed by signal 9", out)
	}
	// The OOM killer looks at the charge often enough that the child
	// gets nowhere near 1 GiB; the bound leaves room for a loaded host.
	if mib, _ := strconv.Atoi(m[1]); mib > 400 {
		t.Errorf("the child got %d MiB under a 100 MiB limit before it was killed", mib)
	}
	t.Logf("child killed after %s MiB (%s); the run took %v", m[1], strings.TrimSpace(errOut), took)
}

// TestMemoryLimitKillingInitEndsTheContainerWith137: init itself
// allocating past the limit is the OOM killer's victim, and the container
// ends as a runc one does, with 128+SIGKILL.
func TestMemoryLimitKillingInitEndsTheContainerWith137(t *testing.T) {
	e := newEnv(t)
	e.buildProgram("bomb", memoryBomb)
	e.writeSpec(limitsSpec(memoryLimit(100<<20), "/bin/bomb", "self"))
	out, errOut, code := e.moatCmd("run", "--bundle", e.bundle, "oominit")
	if code != 137 {
		t.Fatalf("exit %d, want 137 (stdout %q, stderr %q)", code, out, errOut)
	}
}

// TestPidsLimitStopsAForkBombWithEAGAIN: pids.max 50 holds root too (the
// pids controller spares no one): init and 49 children, then EAGAIN.
func TestPidsLimitStopsAForkBombWithEAGAIN(t *testing.T) {
	e := newEnv(t)
	e.buildProgram("forks", forkBomb)
	limit := int64(50)
	e.writeSpec(limitsSpec(&specs.LinuxResources{Pids: &specs.LinuxPids{Limit: &limit}}, "/bin/forks"))
	out, errOut, code := e.moatCmd("run", "--bundle", e.bundle, "pids50")
	if code != 0 {
		t.Fatalf("exit %d (%s)", code, errOut)
	}
	if want := "forked 49, then EAGAIN"; strings.TrimSpace(out) != want {
		t.Fatalf("guest printed %q, want %q", out, want)
	}
}

// TestTheGuestSeesItsLimits: /sys/fs/cgroup is the sandbox's cgroup v2
// with its limits, /proc/meminfo's MemTotal is the memory limit, and the
// guest has the CPUs of its cpuset.
func TestTheGuestSeesItsLimits(t *testing.T) {
	e := newEnv(t)
	limit, pids, quota := int64(200<<20), int64(64), int64(50000)
	r := &specs.LinuxResources{Memory: &specs.LinuxMemory{Limit: &limit}, Pids: &specs.LinuxPids{Limit: &pids},
		CPU: &specs.LinuxCPU{Quota: &quota, Cpus: "0"}}
	e.writeSpec(limitsSpec(r, "/bin/sh", "-c",
		"cat /sys/fs/cgroup/memory.max /sys/fs/cgroup/pids.max /sys/fs/cgroup/cpu.max /sys/devices/system/cpu/online; "+
			"busybox head -n 1 /proc/meminfo; busybox nproc"))
	out, errOut, code := e.moatCmd("run", "--bundle", e.bundle, "seelimits")
	if code != 0 {
		t.Fatalf("exit %d (%s)", code, errOut)
	}
	want := fmt.Sprintf("%d\n%d\n%d 100000\n0\nMemTotal:         %d kB\n1\n", limit, pids, quota, limit/1024)
	if out != want {
		t.Errorf("guest printed\n%s\nwant\n%s", out, want)
	}
}

// TestUpdateChangesTheLimitsTheGuestSees: `moat update` reaches the
// sentry, whose cgroup view shows the new limits at once.
func TestUpdateChangesTheLimitsTheGuestSees(t *testing.T) {
	e := newEnv(t)
	e.writeSpec(limitsSpec(memoryLimit(200<<20), "sleep", "30"))
	if _, errOut, code := e.moatCmd("run", "--detach", "--bundle", e.bundle, "upd"); code != 0 {
		t.Fatalf("run --detach: exit %d: %s", code, errOut)
	}
	defer e.moatCmd("delete", "--force", "upd")
	if _, errOut, code := e.moatCmd("update", "--memory", "50m", "--pids-limit", "20", "upd"); code != 0 {
		t.Fatalf("update: exit %d: %s", code, errOut)
	}
	out, errOut, code := e.moatCmd("exec", "upd", "cat", "/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/pids.max")
	if code != 0 {
		t.Fatalf("exec: exit %d: %s", code, errOut)
	}
	if want := fmt.Sprintf("%d\n20\n", 50<<20); out != want {
		t.Errorf("after the update the guest reads %q, want %q", out, want)
	}
}

// TestEventsStreamsAnOOMEventWhenTheKillerStrikes: `moat events` sends
// runc's {"type":"oom"} when the OOM killer kills a guest process of a
// container that lives on.
func TestEventsStreamsAnOOMEventWhenTheKillerStrikes(t *testing.T) {
	e := newEnv(t)
	e.buildProgram("bomb", memoryBomb)
	// The bomb goes off once events has taken its first look.
	e.writeSpec(limitsSpec(memoryLimit(100<<20), "/bin/sh", "-c", "sleep 2; /bin/bomb; sleep 60"))
	if _, errOut, code := e.moatCmd("create", "--bundle", e.bundle, "oomev"); code != 0 {
		t.Fatalf("create: exit %d: %s", code, errOut)
	}
	defer e.moatCmd("delete", "--force", "oomev")
	if _, errOut, code := e.moatCmd("start", "oomev"); code != 0 {
		t.Fatalf("start: exit %d: %s", code, errOut)
	}
	events := e.moat.Command("events", "--interval", "30s", "oomev")
	stdout, err := events.StdoutPipe()
	must(t, err)
	must(t, events.Start())
	defer func() { events.Process.Kill(); events.Wait() }()
	seen := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if strings.Contains(sc.Text(), `"type":"oom"`) {
				seen <- sc.Text()
				return
			}
		}
		close(seen)
	}()
	select {
	case line, ok := <-seen:
		if !ok {
			t.Fatal("events ended without an oom event")
		}
		if !strings.Contains(line, `"id":"oomev"`) {
			t.Errorf("oom event %q does not name the container", line)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("no oom event within 60 s of the bomb")
	}
}

// twoSpinners spins two threads for 2 s and prints, while they spin and
// after, the wall time and its process's CPU clock.
const twoSpinners = `#include <pthread.h>
#include <stdio.h>
#include <time.h>
static volatile int stop;
static void *spin(void *a) { while (!stop); return a; }
static double secs(clockid_t c) {
	struct timespec ts;
	clock_gettime(c, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}
int main(void) {
	pthread_t a, b;
	double start = secs(CLOCK_MONOTONIC);
	pthread_create(&a, 0, spin, 0);
	pthread_create(&b, 0, spin, 0);
	struct timespec second = {1, 0};
	nanosleep(&second, 0);
	printf("%.3f %.3f\n", secs(CLOCK_MONOTONIC) - start, secs(CLOCK_PROCESS_CPUTIME_ID));
	nanosleep(&second, 0);
	stop = 1;
	pthread_join(a, 0);
	pthread_join(b, 0);
	printf("%.3f %.3f\n", secs(CLOCK_MONOTONIC) - start, secs(CLOCK_PROCESS_CPUTIME_ID));
	return 0;
}`

// TestCPUTimeCountsOnlyWhatTheQuotaGave: two threads spinning under a quota
// of half a CPU get half a CPU between them, and the guest's own CPU clock
// says so, while they spin and after: the time the host kept them off a
// CPU is not the guest's CPU time (RLIMIT_CPU, getrusage and a profiler's
// timers count by it). Linux under the same quota gives the same figures.
func TestCPUTimeCountsOnlyWhatTheQuotaGave(t *testing.T) {
	e := newEnv(t)
	e.buildProgram("spin2", twoSpinners)
	quota := int64(50000)
	e.writeSpec(limitsSpec(&specs.LinuxResources{CPU: &specs.LinuxCPU{Quota: &quota}}, "/bin/spin2"))
	out, errOut, code := e.moatCmd("run", "--bundle", e.bundle, "cputime")
	if code != 0 {
		t.Fatalf("exit %d (%s)", code, errOut)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 2 {
		t.Fatalf("guest printed %q, want two readings", out)
	}
	for i, line := range lines {
		var wall, cpu float64
		if _, err := fmt.Sscanf(line, "%f %f", &wall, &cpu); err != nil {
			t.Fatalf("reading %d: %q: %v", i, line, err)
		}
		t.Logf("reading %d: %.3f s of CPU in %.3f s", i, cpu, wall)
		// Half a CPU, and a period's worth of burst at the start.
		if limit := 0.5*wall + 0.15; cpu > limit {
			t.Errorf("reading %d: %.3f s of CPU in %.3f s under a quota of half a CPU (at most %.3f)", i, cpu, wall, limit)
		}
		if cpu < 0.1*wall {
			t.Errorf("reading %d: only %.3f s of CPU in %.3f s: did the threads spin?", i, cpu, wall)
		}
	}
}
