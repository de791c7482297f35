package sysfs_test

import (
	"fmt"
	"regexp"
	"runtime"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/platform/fake"
	"github.com/moat-sandbox/moat/sentry/fs/sysfs"
	"github.com/moat-sandbox/moat/sentry/kernel"
	"github.com/moat-sandbox/moat/sentry/kernel/kerneltest"
	"github.com/moat-sandbox/moat/sentry/vfs"
	"github.com/moat-sandbox/moat/syscalls"
)

// sandbox mounts a /sys as the boot code does: read-only, with an empty
// cgroup tree at /sys/fs/cgroup when flags ask for one.
func sandbox(t *testing.T, flags int) *kerneltest.Sandbox {
	t.Helper()
	s := kerneltest.New(t, syscalls.NewTable())
	point, err := vfs.MakeMountPoint(s.Root, "sys", true)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := vfs.Attach(point, sysfs.New(runtime.NumCPU()), "sysfs", flags); err != nil {
		t.Fatal(err)
	}
	return s
}

func run(t *testing.T, s *kerneltest.Sandbox, prog fake.Program) {
	t.Helper()
	s.Start(prog, kerneltest.Init{})
	if st := s.Wait(); st != (kernel.ExitStatus{}) {
		t.Errorf("init ended with %+v; log:\n%s", st, s.Log())
	}
}

func read(t *testing.T, g *fake.Guest, name string) (string, unix.Errno) {
	at := unix.AT_FDCWD
	fd, errno := g.Call(unix.SYS_OPENAT, uintptr(at), g.CString(name), unix.O_RDONLY)
	if errno != 0 {
		return "", errno
	}
	defer g.Call(unix.SYS_CLOSE, fd)
	buf := g.Alloc(4096)
	n, errno := g.Call(unix.SYS_READ, fd, buf, 4096)
	b := make([]byte, n)
	g.Read(buf, b)
	return string(b), errno
}

func TestCPUFilesListTheCPUsTheSentryMayUse(t *testing.T) {
	s := sandbox(t, unix.MS_RDONLY)
	want := "0\n"
	if n := runtime.NumCPU(); n > 1 {
		want = fmt.Sprintf("0-%d\n", n-1)
	}
	run(t, s, func(g *fake.Guest) {
		for _, f := range []string{"online", "possible", "present"} {
			if got, errno := read(t, g, "/sys/devices/system/cpu/"+f); got != want || errno != 0 {
				t.Errorf("cpu/%s = %q, %v; want %q", f, got, errno, want)
			}
		}
		if got, _ := read(t, g, "/sys/devices/system/cpu/offline"); got != "\n" {
			t.Errorf("cpu/offline = %q, want an empty line", got)
		}
		// sysconf(_SC_NPROCESSORS_CONF) counts the cpuN directories.
		for i := 0; i < runtime.NumCPU(); i++ {
			buf := g.Alloc(256)
			at := unix.AT_FDCWD
			if _, errno := g.Call(unix.SYS_NEWFSTATAT, uintptr(at), g.CString(fmt.Sprintf("/sys/devices/system/cpu/cpu%d", i)), buf, 0); errno != 0 {
				t.Errorf("cpu%d: %v", i, errno)
			}
		}
	})
}

func TestTransparentHugePagesShowTheSettingInBrackets(t *testing.T) {
	s := sandbox(t, unix.MS_RDONLY)
	run(t, s, func(g *fake.Guest) {
		setting := regexp.MustCompile(`^([a-z+]+ )*\[[a-z+]+\]( [a-z+]+)*\n$`)
		for _, f := range []string{"enabled", "defrag"} {
			if got, _ := read(t, g, "/sys/kernel/mm/transparent_hugepage/"+f); !setting.MatchString(got) {
				t.Errorf("transparent_hugepage/%s = %q, want Linux's \"a [b] c\"", f, got)
			}
		}
		if got, _ := read(t, g, "/sys/kernel/mm/transparent_hugepage/hpage_pmd_size"); got != "2097152\n" {
			t.Errorf("hpage_pmd_size = %q", got)
		}
	})
}

func TestSysfsRefusesEveryWriteWithEROFS(t *testing.T) {
	// Even a sysfs the config mounted read-write refuses writes.
	for _, flags := range []int{unix.MS_RDONLY, 0} {
		s := sandbox(t, flags)
		run(t, s, func(g *fake.Guest) {
			at := unix.AT_FDCWD
			if _, errno := g.Call(unix.SYS_OPENAT, uintptr(at), g.CString("/sys/kernel/mm/transparent_hugepage/enabled"), unix.O_WRONLY); errno != unix.EROFS {
				t.Errorf("open for writing (mount flags %#x): %v, want EROFS", flags, errno)
			}
			if _, errno := g.Call(unix.SYS_MKDIRAT, uintptr(at), g.CString("/sys/fs/cgroup/x"), 0o755); errno != unix.EROFS {
				t.Errorf("mkdir in /sys (mount flags %#x): %v, want EROFS", flags, errno)
			}
		})
	}
}

func TestSysfsHasTheDirectoriesProgramsList(t *testing.T) {
	s := sandbox(t, unix.MS_RDONLY)
	run(t, s, func(g *fake.Guest) {
		for _, d := range []string{"/sys/fs/cgroup", "/sys/class", "/sys/bus", "/sys/devices/system/cpu"} {
			buf := g.Alloc(256)
			at := unix.AT_FDCWD
			if _, errno := g.Call(unix.SYS_NEWFSTATAT, uintptr(at), g.CString(d), buf, 0); errno != 0 {
				t.Errorf("%s: %v", d, errno)
			} else if mode := g.ReadU32(buf + 24); mode&unix.S_IFMT != unix.S_IFDIR {
				t.Errorf("%s has mode %o, want a directory", d, mode)
			}
		}
	})
}
