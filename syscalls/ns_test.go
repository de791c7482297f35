package syscalls

import (
	"bytes"
	"fmt"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/platform/fake"
	"github.com/moat-sandbox/moat/sentry/fs/procfs"
	"github.com/moat-sandbox/moat/sentry/kernel/kerneltest"
)

// UTS and IPC namespaces inside the sandbox: what a new one holds, who
// sees it, and who may make one.

// nodename is uname's host name.
func nodename(t *testing.T, g *fake.Guest) string {
	t.Helper()
	u := g.Alloc(6 * 65)
	if _, errno := g.Call(unix.SYS_UNAME, u); errno != 0 {
		t.Errorf("uname: %v", errno)
	}
	b := make([]byte, 65)
	g.Read(u+65, b)
	return string(b[:bytes.IndexByte(b, 0)])
}

func guestReadlink(g *fake.Guest, path string) string {
	buf := g.Alloc(128)
	n, errno := g.Call(unix.SYS_READLINKAT, argFDCWD(), g.CString(path), buf, 128)
	if errno != 0 {
		return "(" + errno.Error() + ")"
	}
	b := make([]byte, n)
	g.Read(buf, b)
	return string(b)
}

func sethostname(g *fake.Guest, name string) unix.Errno {
	_, errno := g.Call(unix.SYS_SETHOSTNAME, g.CString(name), uintptr(len(name)))
	return errno
}

func TestAHostnameSetInANewUTSNamespaceIsThatNamespacesAlone(t *testing.T) {
	s := kerneltest.New(t, NewTable())
	s.Mkdir("/proc", 0o555)
	s.Mount("/proc", procfs.New(s.Kernel, s.Kernel.RootPIDNamespace()), "proc", 0)
	runIn(t, s, func(g *fake.Guest) {
		outer := guestReadlink(g, "/proc/self/ns/uts")
		r, w := guestPipe(t, g, 0)   // the child has set its name
		r2, w2 := guestPipe(t, g, 0) // the parent has looked
		var inner, innerLink string
		child, _ := g.Fork(func(g *fake.Guest) {
			if _, errno := g.Call(unix.SYS_UNSHARE, unix.CLONE_NEWUTS); errno != 0 {
				t.Errorf("unshare(CLONE_NEWUTS): %v", errno)
			}
			if before := nodename(t, g); before != "kerneltest" {
				t.Errorf("a new UTS namespace starts with host name %q, want its parent's", before)
			}
			if errno := sethostname(g, "inner"); errno != 0 {
				t.Errorf("sethostname: %v", errno)
			}
			inner, innerLink = nodename(t, g), guestReadlink(g, "/proc/self/ns/uts")
			g.Call(unix.SYS_WRITE, w, g.CString("x"), 1)
			g.Call(unix.SYS_READ, r2, g.Alloc(1), 1)
		})
		g.Call(unix.SYS_READ, r, g.Alloc(1), 1)
		if inner != "inner" {
			t.Errorf("host name in the new namespace %q, want inner", inner)
		}
		if got := nodename(t, g); got != "kerneltest" {
			t.Errorf("host name outside %q, want kerneltest", got)
		}
		if outer == innerLink || len(outer) < 6 || outer[:5] != "uts:[" {
			t.Errorf("ns/uts links outside %q and inside %q: want two distinct uts:[N]", outer, innerLink)
		}
		if got := guestReadlink(g, fmt.Sprintf("/proc/%d/ns/uts", child)); got != innerLink {
			t.Errorf("the child's ns/uts seen by its parent %q, want %q", got, innerLink)
		}
		// setns through the child's namespace file joins it.
		fd, errno := g.Call(unix.SYS_OPENAT, argFDCWD(), g.CString(fmt.Sprintf("/proc/%d/ns/uts", child)), unix.O_RDONLY, 0)
		if errno != 0 {
			t.Fatalf("open ns/uts: %v", errno)
		}
		_, errno = g.Call(unix.SYS_SETNS, fd, unix.CLONE_NEWIPC)
		expectErrno(t, "setns of a uts file as CLONE_NEWIPC", 0, errno, unix.EINVAL)
		_, errno = g.Call(unix.SYS_SETNS, fd, unix.CLONE_NEWUTS)
		expectErrno(t, "setns(CLONE_NEWUTS)", 0, errno, 0)
		if got := nodename(t, g); got != "inner" {
			t.Errorf("host name after setns %q, want inner", got)
		}
		g.Call(unix.SYS_WRITE, w2, g.CString("x"), 1)
		g.Wait(child, 0)
	})
}

func TestANewIPCNamespaceHasNoneOfTheOldQueuesSegmentsOrMessageQueues(t *testing.T) {
	runGuest(t, func(g *fake.Guest) {
		mq := mqOpen(t, g, "outer", unix.O_RDWR|unix.O_NONBLOCK, 1, 8)
		if _, errno := g.Call(unix.SYS_MSGGET, 77, unix.IPC_CREAT|0o600); errno != 0 {
			t.Errorf("msgget: %v", errno)
		}
		child, _ := g.Fork(func(g *fake.Guest) {
			if _, errno := g.Call(unix.SYS_UNSHARE, unix.CLONE_NEWIPC); errno != 0 {
				t.Errorf("unshare(CLONE_NEWIPC): %v", errno)
			}
			_, errno := g.Call(unix.SYS_MQ_OPEN, g.CString("outer"), unix.O_RDWR, 0, 0)
			expectErrno(t, "mq_open of the old namespace's queue", 0, errno, unix.ENOENT)
			_, errno = g.Call(unix.SYS_MSGGET, 77, 0)
			expectErrno(t, "msgget of the old namespace's key", 0, errno, unix.ENOENT)
			mqOpen(t, g, "inner", unix.O_RDWR, 1, 8)
			// The descriptor from before goes on naming the old queue.
			expectErrno(t, "mq_timedsend on the old queue", 0, mqSend(g, mq, "x", 0), 0)
		})
		g.Wait(child, 0)
		_, errno := g.Call(unix.SYS_MQ_OPEN, g.CString("inner"), unix.O_RDWR, 0, 0)
		expectErrno(t, "mq_open of the new namespace's queue from outside", 0, errno, unix.ENOENT)
		expectErrno(t, "mq_timedsend: the child's message filled the queue", 0, mqSend(g, mq, "y", 0), unix.EAGAIN)
	})
}

func TestWithoutCapSysAdminNamespacesAndNamesAreEPERM(t *testing.T) {
	s := kerneltest.New(t, NewTable())
	s.Start(func(g *fake.Guest) {
		_, errno := g.Call(unix.SYS_UNSHARE, unix.CLONE_NEWUTS)
		expectErrno(t, "unshare(CLONE_NEWUTS)", 0, errno, unix.EPERM)
		_, errno = g.Call(unix.SYS_UNSHARE, unix.CLONE_NEWIPC)
		expectErrno(t, "unshare(CLONE_NEWIPC)", 0, errno, unix.EPERM)
		r, errno := g.Clone(unix.CLONE_NEWUTS|uint64(unix.SIGCHLD), 0, 0, 0, 0, noChildProgram(t))
		expectErrno(t, "clone(CLONE_NEWUTS)", r, errno, unix.EPERM)
		expectErrno(t, "sethostname", 0, sethostname(g, "x"), unix.EPERM)
		_, errno = g.Call(unix.SYS_SETDOMAINNAME, g.CString("x"), 1)
		expectErrno(t, "setdomainname", 0, errno, unix.EPERM)
		_, errno = g.Call(unix.SYS_UNSHARE, unix.CLONE_FILES|unix.CLONE_FS|unix.CLONE_SYSVSEM)
		expectErrno(t, "unshare of what needs no privilege", 0, errno, 0)
		_, errno = g.Call(unix.SYS_UNSHARE, unix.CLONE_PTRACE)
		expectErrno(t, "unshare of an unknown flag", 0, errno, unix.EINVAL)
		// A user namespace needs no privilege and gives CAP_SYS_ADMIN
		// inside it alone: the UTS namespace is still the first one's.
		_, errno = g.Call(unix.SYS_UNSHARE, unix.CLONE_NEWUSER)
		expectErrno(t, "unshare(CLONE_NEWUSER)", 0, errno, 0)
		expectErrno(t, "sethostname in the first UTS namespace", 0, sethostname(g, "x"), unix.EPERM)
		_, errno = g.Call(unix.SYS_UNSHARE, unix.CLONE_NEWUTS)
		expectErrno(t, "unshare(CLONE_NEWUTS) in the new user namespace", 0, errno, 0)
		expectErrno(t, "sethostname in a UTS namespace of its own", 0, sethostname(g, "x"), 0)
	}, kerneltest.Init{UID: 1000, GID: 1000})
	if got := s.Wait(); got.Code != 0 || got.Signo != 0 {
		t.Errorf("init ended with %+v; kernel log:\n%s", got, s.Log())
	}
}

func TestUnshareOfTheThreadOrMemoryIsEINVALOnceShared(t *testing.T) {
	runGuest(t, func(g *fake.Guest) {
		_, errno := g.Call(unix.SYS_UNSHARE, unix.CLONE_THREAD|unix.CLONE_VM|unix.CLONE_SIGHAND)
		expectErrno(t, "unshare(CLONE_THREAD|CLONE_VM|CLONE_SIGHAND) of a lone thread", 0, errno, 0)
		r, w := guestPipe(t, g, 0)
		_, tidAddr, _ := g.Thread(func(g *fake.Guest) { g.Call(unix.SYS_READ, r, g.Alloc(1), 1) })
		_, errno = g.Call(unix.SYS_UNSHARE, unix.CLONE_THREAD)
		expectErrno(t, "unshare(CLONE_THREAD) with a second thread", 0, errno, unix.EINVAL)
		g.Call(unix.SYS_WRITE, w, g.CString("x"), 1)
		g.Join(tidAddr)
		if errno := sethostname(g, "0123456789012345678901234567890123456789012345678901234567890123456"); errno != unix.EINVAL {
			t.Errorf("sethostname of 67 bytes: %v, want EINVAL", errno)
		}
	})
}

func noChildProgram(t *testing.T) fake.Program {
	return func(g *fake.Guest) { t.Errorf("a refused clone's child ran") }
}

func TestTheSandboxsSingleNamespacesShowAndJoiningThemChangesNothing(t *testing.T) {
	s := kerneltest.New(t, NewTable())
	s.Mkdir("/proc", 0o555)
	s.Mount("/proc", procfs.New(s.Kernel, s.Kernel.RootPIDNamespace()), "proc", 0)
	runIn(t, s, func(g *fake.Guest) {
		for _, c := range [][2]string{{"net", "net:["}, {"pid_for_children", "pid:["}, {"user", "user:["}, {"cgroup", "cgroup:["}} {
			if got := guestReadlink(g, "/proc/self/ns/"+c[0]); len(got) < len(c[1]) || got[:len(c[1])] != c[1] {
				t.Errorf("ns/%s reads %q, want %s...]", c[0], got, c[1])
			}
		}
		if guestReadlink(g, "/proc/self/ns/pid") != guestReadlink(g, "/proc/self/ns/pid_for_children") {
			t.Errorf("pid and pid_for_children differ")
		}
		net := guestOpen(t, g, "/proc/self/ns/net", unix.O_RDONLY)
		_, errno := g.Call(unix.SYS_SETNS, net, unix.CLONE_NEWNET)
		expectErrno(t, "setns of the sandbox's network namespace", 0, errno, 0)
		_, errno = g.Call(unix.SYS_SETNS, net, unix.CLONE_NEWPID)
		expectErrno(t, "setns of a net file as CLONE_NEWPID", 0, errno, unix.EINVAL)
		user := guestOpen(t, g, "/proc/self/ns/user", unix.O_RDONLY)
		_, errno = g.Call(unix.SYS_SETNS, user, 0)
		expectErrno(t, "setns of one's own user namespace", 0, errno, unix.EINVAL)
	})
}
