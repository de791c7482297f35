package integration

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/internal/confine"
)

// procStatus is /proc/PID/status as field: value.
func procStatus(t *testing.T, pid int) map[string]string {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	must(t, err)
	m := map[string]string{}
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok {
			m[k] = strings.TrimSpace(v)
		}
	}
	return m
}

// hexField is a status field written in hex (CapEff and its kind).
func hexField(t *testing.T, status map[string]string, name string) uint64 {
	t.Helper()
	v, err := strconv.ParseUint(status[name], 16, 64)
	if err != nil {
		t.Fatalf("%s: %q: %v", name, status[name], err)
	}
	return v
}

// sameFile reports whether two paths are one inode.
func sameFile(t *testing.T, a, b string) bool {
	t.Helper()
	var sa, sb unix.Stat_t
	must(t, unix.Stat(a, &sa))
	must(t, unix.Stat(b, &sb))
	return sa.Dev == sb.Dev && sa.Ino == sb.Ino
}

// goferOf is the pid of the gofer serving bundle.
func goferOf(t *testing.T, bundle string) int {
	t.Helper()
	procs, _ := filepath.Glob("/proc/[0-9]*")
	for _, p := range procs {
		pid, _ := strconv.Atoi(filepath.Base(p))
		args := cmdline(pid)
		if len(args) >= 2 && args[1] == "gofer" && strings.Contains(strings.Join(args, " "), bundle) {
			return pid
		}
	}
	t.Fatalf("no gofer serves %s", bundle)
	return 0
}

// TestRunningContainersSentryGoferAndStubsAreConfined reads, as the host
// sees them, the credentials of a running container's processes: each is
// under a seccomp filter with no_new_privs, in a pid namespace of its own,
// with a root that is not the host's; the sentry and its stubs hold no
// capability and (started by root) are the overflow user; the gofer keeps
// only what its file operations need; a stub holds no descriptor but its
// shared memory, the socket it receives image files' descriptors on and
// those, read-only.
func TestRunningContainersSentryGoferAndStubsAreConfined(t *testing.T) {
	e := newEnv(t)
	sentry := e.runSleeper()
	gofer := goferOf(t, e.bundle)
	stubs := childPids(sentry)
	switch {
	case onKVM() && len(stubs) != 0:
		t.Errorf("the sentry %d on kvm has children %v: it runs guest code itself", sentry, stubs)
	case !onKVM() && len(stubs) == 0:
		t.Fatalf("the sentry %d of a running guest has no stub", sentry)
	}

	check := func(what string, pid int, maxCaps uint64) map[string]string {
		st := procStatus(t, pid)
		if st["Seccomp"] != "2" || st["NoNewPrivs"] != "1" {
			t.Errorf("%s %d: Seccomp %q, NoNewPrivs %q; want 2 and 1", what, pid, st["Seccomp"], st["NoNewPrivs"])
		}
		if caps := hexField(t, st, "CapEff") | hexField(t, st, "CapPrm") | hexField(t, st, "CapBnd"); caps&^maxCaps != 0 {
			t.Errorf("%s %d: capabilities %#x beyond %#x", what, pid, caps, maxCaps)
		}
		if n := len(strings.Fields(st["NSpid"])); n < 2 {
			t.Errorf("%s %d: NSpid %q: not in a pid namespace of its own", what, pid, st["NSpid"])
		}
		if sameFile(t, fmt.Sprintf("/proc/%d/root/", pid), "/") {
			t.Errorf("%s %d: its root is the host's /", what, pid)
		}
		for _, ns := range []string{"mnt", "net", "ipc", "uts", "user", "cgroup"} {
			own, _ := os.Readlink(fmt.Sprintf("/proc/%d/ns/%s", pid, ns))
			host, _ := os.Readlink("/proc/self/ns/" + ns)
			if own == "" || own == host {
				t.Errorf("%s %d: %s namespace %q is the host's (%q)", what, pid, ns, own, host)
			}
		}
		return st
	}
	st := check("sentry", sentry, 0)
	if entries, err := os.ReadDir(fmt.Sprintf("/proc/%d/root/", sentry)); err != nil || len(entries) != 0 {
		t.Errorf("the sentry's root holds %v (%v); want an empty directory", entries, err)
	}
	if os.Geteuid() == 0 {
		nobody := strconv.Itoa(confine.Nobody.Host)
		if uid := strings.Fields(st["Uid"]); len(uid) != 4 || uid[0] != nobody || uid[1] != nobody || uid[2] != nobody || uid[3] != nobody {
			t.Errorf("sentry %d: Uid %q, want %s in all four", sentry, st["Uid"], nobody)
		}
	}
	check("gofer", gofer, confine.GoferCapabilities|1<<unix.CAP_DAC_READ_SEARCH)
	for _, stub := range stubs {
		check("stub", stub, 0)
		fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", stub))
		must(t, err)
		sockets := 0
		for _, fd := range fds {
			path := fmt.Sprintf("/proc/%d/fd/%s", stub, fd.Name())
			target, _ := os.Readlink(path)
			switch {
			case strings.HasPrefix(target, "/memfd:moat-"):
			case strings.HasPrefix(target, "socket:"):
				sockets++ // the one host files' descriptors come on
			default:
				// An image file the gofer opened, which the stub maps:
				// read-only, and the image's own (busybox here).
				if !sameFile(t, path, filepath.Join(e.bundle, "rootfs/bin/busybox")) || fdAccessMode(t, stub, fd.Name()) != unix.O_RDONLY {
					t.Errorf("stub %d holds fd %s: %s; want its shared memory files, a socket and image files opened read-only alone", stub, fd.Name(), target)
				}
			}
		}
		if sockets > 1 {
			t.Errorf("stub %d holds %d sockets; want one at most", stub, sockets)
		}
	}
}

// fdAccessMode is O_RDONLY, O_WRONLY or O_RDWR: how pid's descriptor fd
// was opened.
func fdAccessMode(t *testing.T, pid int, fd string) int {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/fdinfo/%s", pid, fd))
	must(t, err)
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "flags:"); ok {
			flags, err := strconv.ParseUint(strings.TrimSpace(v), 8, 32)
			must(t, err)
			return int(flags) & unix.O_ACCMODE
		}
	}
	t.Fatalf("no flags in fdinfo %s of %d", fd, pid)
	return 0
}

// childPids are pid's children: each thread's (a child is listed under
// the thread that made it).
func childPids(pid int) []int {
	files, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", pid))
	var pids []int
	for _, file := range files {
		b, _ := os.ReadFile(file)
		for _, f := range strings.Fields(string(b)) {
			if n, err := strconv.Atoi(f); err == nil {
				pids = append(pids, n)
			}
		}
	}
	return pids
}
