package syscalls

import (
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/platform/fake"
	"github.com/moat-sandbox/moat/sentry/fs/procfs"
	"github.com/moat-sandbox/moat/sentry/kernel/kerneltest"
)

// Mount namespaces and mount(2) inside the sandbox's tree.

func mount(g *fake.Guest, source, target, fstype string, flags uintptr, data string) unix.Errno {
	str := func(s string) uintptr {
		if s == "" {
			return 0
		}
		return g.CString(s)
	}
	_, errno := g.Call(unix.SYS_MOUNT, str(source), g.CString(target), str(fstype), flags, str(data))
	return errno
}

func exists(g *fake.Guest, path string) bool {
	_, errno := g.Call(unix.SYS_FACCESSAT, argFDCWD(), g.CString(path), unix.F_OK, 0)
	return errno == 0
}

func readGuestFile(t *testing.T, g *fake.Guest, path string) string {
	fd := guestOpen(t, g, path, unix.O_RDONLY)
	defer g.Call(unix.SYS_CLOSE, fd)
	buf := g.Alloc(16384)
	n, _ := g.Call(unix.SYS_READ, fd, buf, 16384)
	b := make([]byte, n)
	g.Read(buf, b)
	return string(b)
}

func TestAMountInANewMountNamespaceIsSeenThereAlone(t *testing.T) {
	s := kerneltest.New(t, NewTable())
	s.Mkdir("/proc", 0o555)
	s.Mount("/proc", procfs.New(s.Kernel, s.Kernel.RootPIDNamespace()), "proc", 0)
	s.Mkdir("/mnt", 0o755)
	runIn(t, s, func(g *fake.Guest) {
		r, w := guestPipe(t, g, 0)
		r2, w2 := guestPipe(t, g, 0)
		child, _ := g.Fork(func(g *fake.Guest) {
			if _, errno := g.Call(unix.SYS_UNSHARE, unix.CLONE_NEWNS); errno != 0 {
				t.Errorf("unshare(CLONE_NEWNS): %v", errno)
			}
			// unshare(1)'s first step.
			if errno := mount(g, "none", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); errno != 0 {
				t.Errorf("mount(MS_REC|MS_PRIVATE) of /: %v", errno)
			}
			if errno := mount(g, "t", "/mnt", "tmpfs", 0, "size=1m"); errno != 0 {
				t.Errorf("mount tmpfs: %v", errno)
			}
			guestOpen(t, g, "/mnt/x", unix.O_CREAT|unix.O_WRONLY)
			if info := readGuestFile(t, g, "/proc/self/mountinfo"); !strings.Contains(info, " /mnt rw") || !strings.Contains(info, "tmpfs t rw,size=1m") {
				t.Errorf("mountinfo in the namespace lacks the tmpfs at /mnt:\n%s", info)
			}
			g.Call(unix.SYS_WRITE, w, g.CString("x"), 1)
			g.Call(unix.SYS_READ, r2, g.Alloc(1), 1)
			_, errno := g.Call(unix.SYS_UMOUNT2, g.CString("/mnt"), 0)
			expectErrno(t, "umount2 of /mnt", 0, errno, 0)
			if exists(g, "/mnt/x") {
				t.Errorf("/mnt/x is still there once the tmpfs went")
			}
			_, errno = g.Call(unix.SYS_UMOUNT2, g.CString("/mnt"), 0)
			expectErrno(t, "umount2 of a directory that is no mount", 0, errno, unix.EINVAL)
		})
		g.Call(unix.SYS_READ, r, g.Alloc(1), 1)
		if exists(g, "/mnt/x") {
			t.Errorf("the parent sees the child's mount")
		}
		if info := readGuestFile(t, g, "/proc/self/mountinfo"); strings.Contains(info, " /mnt ") {
			t.Errorf("the parent's mountinfo lists the child's mount:\n%s", info)
		}
		g.Call(unix.SYS_WRITE, w2, g.CString("x"), 1)
		g.Wait(child, 0)
	})
}

func TestABindMountRemountedReadOnlyRefusesWrites(t *testing.T) {
	s := kerneltest.New(t, NewTable())
	s.Mkdir("/mnt", 0o755)
	runIn(t, s, func(g *fake.Guest) {
		guestOpen(t, g, "/tmp/f", unix.O_CREAT|unix.O_WRONLY)
		if errno := mount(g, "/tmp", "/mnt", "", unix.MS_BIND|unix.MS_REC, ""); errno != 0 {
			t.Fatalf("bind mount: %v", errno)
		}
		if !exists(g, "/mnt/f") {
			t.Errorf("/mnt/f missing after the bind")
		}
		if errno := mount(g, "", "/mnt", "", unix.MS_BIND|unix.MS_REMOUNT|unix.MS_RDONLY, ""); errno != 0 {
			t.Errorf("remount read-only: %v", errno)
		}
		_, errno := g.Call(unix.SYS_OPENAT, argFDCWD(), g.CString("/mnt/g"), unix.O_CREAT|unix.O_WRONLY, 0o644)
		expectErrno(t, "create on the read-only bind", 0, errno, unix.EROFS)
		guestOpen(t, g, "/tmp/g", unix.O_CREAT|unix.O_WRONLY) // the original stays writable
		expectErrno(t, "mount of an unknown type", 0, mount(g, "x", "/mnt", "ext4", 0, ""), unix.ENODEV)
		expectErrno(t, "tmpfs with an unknown option", 0, mount(g, "x", "/mnt", "tmpfs", 0, "bogus=1"), unix.EINVAL)
		expectErrno(t, "mount on a missing path", 0, mount(g, "x", "/nowhere", "tmpfs", 0, ""), unix.ENOENT)
		expectErrno(t, "a propagation change off a mount's root", 0, mount(g, "", "/tmp/..", "", unix.MS_PRIVATE, ""), 0)
		expectErrno(t, "a propagation change off a mount's root", 0, mount(g, "", "/mnt/f", "", unix.MS_PRIVATE, ""), unix.EINVAL)
	})
}

func TestWithoutCapSysAdminMountAndUmountAreEPERM(t *testing.T) {
	s := kerneltest.New(t, NewTable())
	s.Start(func(g *fake.Guest) {
		expectErrno(t, "mount", 0, mount(g, "t", "/tmp", "tmpfs", 0, ""), unix.EPERM)
		_, errno := g.Call(unix.SYS_UMOUNT2, g.CString("/tmp"), 0)
		expectErrno(t, "umount2", 0, errno, unix.EPERM)
		_, errno = g.Call(unix.SYS_UNSHARE, unix.CLONE_NEWNS)
		expectErrno(t, "unshare(CLONE_NEWNS)", 0, errno, unix.EPERM)
	}, kerneltest.Init{UID: 1000, GID: 1000})
	if got := s.Wait(); got.Code != 0 || got.Signo != 0 {
		t.Errorf("init ended with %+v; kernel log:\n%s", got, s.Log())
	}
}

// TestPivotRootAsBubblewrapUsesIt follows bwrap --ro-bind / / true: a
// tmpfs becomes the root with the old root below it, a read-only bind of
// the old root becomes the root in turn, stacked over "." and unmounted
// from under it.
func TestPivotRootAsBubblewrapUsesIt(t *testing.T) {
	runGuest(t, func(g *fake.Guest) {
		call := func(what string, nr uintptr, args ...uintptr) uintptr {
			t.Helper()
			r, errno := g.Call(nr, args...)
			if errno != 0 {
				t.Errorf("%s: %v", what, errno)
			}
			return r
		}
		mkdir := func(p string) { call("mkdir "+p, unix.SYS_MKDIRAT, argFDCWD(), g.CString(p), 0o755) }
		chdir := func(p string) { call("chdir "+p, unix.SYS_CHDIR, g.CString(p)) }
		call("unshare", unix.SYS_UNSHARE, unix.CLONE_NEWNS)
		if errno := mount(g, "", "/", "", unix.MS_REC|unix.MS_SLAVE, ""); errno != 0 {
			t.Errorf("MS_SLAVE: %v", errno)
		}
		mkdir("/tmp/base")
		if errno := mount(g, "tmpfs", "/tmp/base", "tmpfs", unix.MS_NODEV|unix.MS_NOSUID, ""); errno != 0 {
			t.Fatalf("tmpfs: %v", errno)
		}
		chdir("/tmp/base")
		mkdir("newroot")
		if errno := mount(g, "newroot", "newroot", "", unix.MS_MGC_VAL|unix.MS_SILENT|unix.MS_BIND|unix.MS_REC, ""); errno != 0 {
			t.Errorf("bind newroot on itself: %v", errno)
		}
		mkdir("oldroot")
		_, errno := g.Call(unix.SYS_PIVOT_ROOT, g.CString("/tmp/base"), g.CString("/tmp"))
		expectErrno(t, "pivot_root with put_old on the root's mount", 0, errno, unix.EBUSY)
		call("pivot_root", unix.SYS_PIVOT_ROOT, g.CString("/tmp/base"), g.CString("oldroot"))
		chdir("/")
		if !exists(g, "/oldroot/bin") || !exists(g, "/newroot") {
			t.Errorf("after the first pivot: /oldroot/bin %v, /newroot %v", exists(g, "/oldroot/bin"), exists(g, "/newroot"))
		}
		if errno := mount(g, "/oldroot/", "/newroot/", "", unix.MS_SILENT|unix.MS_BIND|unix.MS_REC, ""); errno != 0 {
			t.Errorf("bind the old root: %v", errno)
		}
		if errno := mount(g, "none", "/newroot/", "", unix.MS_SILENT|unix.MS_BIND|unix.MS_REMOUNT|unix.MS_RDONLY, ""); errno != 0 {
			t.Errorf("remount it read-only: %v", errno)
		}
		if errno := mount(g, "oldroot", "oldroot", "", unix.MS_SILENT|unix.MS_REC|unix.MS_PRIVATE, ""); errno != 0 {
			t.Errorf("oldroot private: %v", errno)
		}
		call("umount2 oldroot", unix.SYS_UMOUNT2, g.CString("oldroot"), unix.MNT_DETACH)
		old := call("open /", unix.SYS_OPENAT, argFDCWD(), g.CString("/"), unix.O_DIRECTORY|unix.O_RDONLY, 0)
		chdir("/newroot")
		call("pivot_root . .", unix.SYS_PIVOT_ROOT, g.CString("."), g.CString("."))
		call("fchdir", unix.SYS_FCHDIR, old)
		call("umount2 .", unix.SYS_UMOUNT2, g.CString("."), unix.MNT_DETACH)
		chdir("/")
		if !exists(g, "/bin") || exists(g, "/newroot") || exists(g, "/oldroot") {
			t.Errorf("the final root: /bin %v, /newroot %v, /oldroot %v; want the old root's tree alone",
				exists(g, "/bin"), exists(g, "/newroot"), exists(g, "/oldroot"))
		}
		_, errno = g.Call(unix.SYS_OPENAT, argFDCWD(), g.CString("/bin/new"), unix.O_CREAT|unix.O_WRONLY, 0o644)
		expectErrno(t, "create in the read-only root", 0, errno, unix.EROFS)
	})
}
