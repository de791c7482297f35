package boot

import (
	"strings"
	"testing"
	"time"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/platform/fake"
	"github.com/moat-sandbox/moat/sentry/fs/devfs"
	"github.com/moat-sandbox/moat/sentry/fs/mqueue"
	"github.com/moat-sandbox/moat/sentry/fs/procfs"
	"github.com/moat-sandbox/moat/sentry/kernel"
	"github.com/moat-sandbox/moat/sentry/kernel/kerneltest"
	"github.com/moat-sandbox/moat/sentry/vfs"
	"github.com/moat-sandbox/moat/syscalls"
)

// The mounts of the configs that runc, docker and podman generate, less
// their binds (served by the gofer), /dev (always devfs) and /proc (made
// once the kernel is): each must mount with nothing logged.
var generatedMounts = map[string][]specs.Mount{
	"runc spec": {
		{Destination: "/dev/pts", Type: "devpts", Source: "devpts", Options: []string{"nosuid", "noexec", "newinstance", "ptmxmode=0666", "mode=0620", "gid=5"}},
		{Destination: "/dev/shm", Type: "tmpfs", Source: "shm", Options: []string{"nosuid", "noexec", "nodev", "mode=1777", "size=65536k"}},
		{Destination: "/dev/mqueue", Type: "mqueue", Source: "mqueue", Options: []string{"nosuid", "noexec", "nodev"}},
		{Destination: "/sys", Type: "sysfs", Source: "sysfs", Options: []string{"nosuid", "noexec", "nodev", "ro"}},
		{Destination: "/sys/fs/cgroup", Type: "cgroup", Source: "cgroup", Options: []string{"nosuid", "noexec", "nodev", "relatime", "ro"}},
	},
	"docker": {
		{Destination: "/dev/pts", Type: "devpts", Source: "devpts", Options: []string{"nosuid", "noexec", "newinstance", "ptmxmode=0666", "mode=0620", "gid=5"}},
		{Destination: "/sys", Type: "sysfs", Source: "sysfs", Options: []string{"nosuid", "noexec", "nodev", "ro"}},
		{Destination: "/sys/fs/cgroup", Type: "cgroup", Source: "cgroup", Options: []string{"ro", "nosuid", "noexec", "nodev"}},
		{Destination: "/dev/mqueue", Type: "mqueue", Source: "mqueue", Options: []string{"nosuid", "noexec", "nodev"}},
		{Destination: "/dev/shm", Type: "tmpfs", Source: "shm", Options: []string{"nosuid", "noexec", "nodev", "mode=1777", "size=67108864"}},
	},
	"podman": {
		{Destination: "/sys", Type: "sysfs", Source: "sysfs", Options: []string{"nosuid", "noexec", "nodev", "ro"}},
		{Destination: "/dev/pts", Type: "devpts", Source: "devpts", Options: []string{"nosuid", "noexec", "newinstance", "ptmxmode=0666", "mode=0620", "gid=5"}},
		{Destination: "/dev/mqueue", Type: "mqueue", Source: "mqueue", Options: []string{"nosuid", "noexec", "nodev"}},
		{Destination: "/sys/fs/cgroup", Type: "cgroup", Source: "cgroup", Options: []string{"rprivate", "nosuid", "noexec", "nodev", "relatime", "ro"}},
		{Destination: "/run/lock", Type: "tmpfs", Source: "tmpfs", Options: []string{"rw", "rprivate", "nosuid", "nodev", "tmpcopyup", "size=65536k"}},
	},
}

func TestGeneratedConfigsMountEveryMountWithoutALogLine(t *testing.T) {
	for name, ms := range generatedMounts {
		root := tmpfsRoot(t)
		dev, _ := devfs.New(unix.Timespec{}, nil)
		if err := mountAt(root, "/dev", dev, "devtmpfs", unix.MS_NOSUID, "devtmpfs", ""); err != nil {
			t.Fatal(err)
		}
		var log logged
		for _, m := range ms {
			if err := mountFS(root, m, memFile(t), kerneltest.New(t, syscalls.NewTable()).Kernel, mqueue.NewNamespace(time.Now, mqueue.NewAccounts()), log.log); err != nil {
				t.Errorf("%s: mount of %s at %s: %v", name, m.Type, m.Destination, err)
			}
		}
		for _, l := range log {
			t.Errorf("%s: logged %q", name, l)
		}
	}
}

func TestSysfsAndCgroupMountsAreReadOnlyWhateverTheOptions(t *testing.T) {
	root := tmpfsRoot(t)
	var log logged
	for _, m := range []specs.Mount{
		{Destination: "/sys", Type: "sysfs", Options: []string{"nosuid", "rw"}},
		{Destination: "/sys/fs/cgroup", Type: "cgroup2", Options: []string{"nodev"}},
		{Destination: "/dev/mqueue", Type: "mqueue", Options: []string{"nosuid"}},
	} {
		if err := mountFS(root, m, memFile(t), kerneltest.New(t, syscalls.NewTable()).Kernel, mqueue.NewNamespace(time.Now, mqueue.NewAccounts()), log.log); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		dest, typ string
		flags     int
	}{
		{"/sys", "sysfs", unix.MS_NOSUID | unix.MS_RDONLY},
		{"/sys/fs/cgroup", "cgroup2", unix.MS_NODEV | unix.MS_RDONLY},
		// /dev/mqueue's parents are made: the tree had no /dev.
		{"/dev/mqueue", "mqueue", unix.MS_NOSUID},
	} {
		p := lookup(t, root, c.dest)
		if p.Mount.Type != c.typ || p.Mount.Flags != c.flags {
			t.Errorf("%s: a %s mount with flags %#x, want %s with %#x", c.dest, p.Mount.Type, p.Mount.Flags, c.typ, c.flags)
		}
	}
}

func TestMountAtMakesTheMissingParentsAsRuncsMkdirP(t *testing.T) {
	root := tmpfsRoot(t)
	if err := mountTmpfs(root, "/no/such/dir", nil, memFile(t), (&logged{}).log); err != nil {
		t.Fatalf("mount under missing parents: %v", err)
	}
	for _, name := range []string{"/no", "/no/such"} {
		if p := lookup(t, root, name); !p.Dentry.IsDir() || p.Mount != root.Mount {
			t.Errorf("%s: want a directory made in the root's tree", name)
		}
	}
	if p := lookup(t, root, "/no/such/dir"); p.Mount.Type != "tmpfs" || p.Mount == root.Mount {
		t.Error("/no/such/dir is not the new tmpfs")
	}
}

func TestTmpfsDataIsWhatLinuxShowsOfTheOptions(t *testing.T) {
	for _, c := range []struct {
		opts []string
		want string
	}{
		{nil, ""},
		{[]string{"mode=1777"}, ""},
		{[]string{"size=65536k", "mode=755"}, "size=65536k,mode=755"},
		{[]string{"mode=0700", "uid=5", "gid=6", "size=1m"}, "size=1024k,mode=700,uid=5,gid=6"},
	} {
		root := tmpfsRoot(t)
		if err := mountTmpfs(root, "/t", c.opts, memFile(t), (&logged{}).log); err != nil {
			t.Fatal(err)
		}
		for _, m := range vfs.Mounts(root) {
			if m.Path == "/t" && m.Data != c.want {
				t.Errorf("options %q: data %q, want %q", c.opts, m.Data, c.want)
			}
		}
	}
}

// pathRulesSandbox is a kerneltest sandbox with devfs at /dev, /proc and
// a sysfs at /sys, a file /etc/secret and a directory /etc/private, and
// runc's default readonlyPaths and maskedPaths with those two added.
func pathRulesSandbox(t *testing.T) *kerneltest.Sandbox {
	t.Helper()
	s := kerneltest.New(t, syscalls.NewTable())
	s.Mkdir("/etc", 0o755)
	s.Mkdir("/etc/private", 0o755)
	s.WriteFile("/etc/private/key", 0o644, []byte("hidden"))
	s.WriteFile("/etc/secret", 0o644, []byte("secret"))
	dev, _ := devfs.New(unix.Timespec{}, nil)
	if err := mountAt(s.Root, "/dev", dev, "devtmpfs", unix.MS_NOSUID, "", ""); err != nil {
		t.Fatal(err)
	}
	if err := mountFS(s.Root, specs.Mount{Destination: "/sys", Type: "sysfs", Options: []string{"ro"}}, s.MemFile, s.Kernel, nil, (&logged{}).log); err != nil {
		t.Fatal(err)
	}
	if err := mountAt(s.Root, "/proc", procfs.New(s.Kernel, s.Kernel.RootPIDNamespace()), "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "proc", ""); err != nil {
		t.Fatal(err)
	}
	linux := &specs.Linux{
		MaskedPaths: []string{"/proc/acpi", "/proc/asound", "/proc/kcore", "/proc/keys", "/proc/latency_stats",
			"/proc/timer_list", "/proc/timer_stats", "/proc/sched_debug", "/sys/firmware", "/proc/scsi",
			"/etc/secret", "/etc/private"},
		ReadonlyPaths: []string{"/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger"},
	}
	if err := applyPathRules(s.Root, linux, s.MemFile); err != nil {
		t.Fatalf("applyPathRules: %v", err)
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

func openAt(g *fake.Guest, name string, flags int) (uintptr, unix.Errno) {
	at := unix.AT_FDCWD
	return g.Call(unix.SYS_OPENAT, uintptr(at), g.CString(name), uintptr(flags))
}

func TestReadonlyPathsRefuseWritesBelowThemWithEROFS(t *testing.T) {
	s := pathRulesSandbox(t)
	run(t, s, func(g *fake.Guest) {
		// Root could open hostname for writing; under the read-only bind
		// of /proc/sys it gets EROFS, as in a runc container.
		if _, errno := openAt(g, "/proc/sys/kernel/hostname", unix.O_WRONLY); errno != unix.EROFS {
			t.Errorf("open /proc/sys/kernel/hostname for writing: %v, want EROFS", errno)
		}
		// The rest of /proc is as writable as before.
		if fd, errno := openAt(g, "/proc/self/comm", unix.O_WRONLY); errno != 0 {
			t.Errorf("open /proc/self/comm for writing: %v", errno)
		} else {
			g.Call(unix.SYS_CLOSE, fd)
		}
		if fd, errno := openAt(g, "/proc/sys/kernel/osrelease", unix.O_RDONLY); errno != 0 {
			t.Errorf("read under /proc/sys: %v", errno)
		} else {
			g.Call(unix.SYS_CLOSE, fd)
		}
	})
}

func TestMaskedPathsReadEmptyAndMissingOnesAreSkipped(t *testing.T) {
	s := pathRulesSandbox(t)
	run(t, s, func(g *fake.Guest) {
		buf := g.Alloc(64)
		// A masked file is /dev/null: empty to read, writes vanish.
		fd, errno := openAt(g, "/etc/secret", unix.O_RDWR)
		if errno != 0 {
			t.Errorf("open the masked file: %v", errno)
		} else {
			if n, _ := g.Call(unix.SYS_READ, fd, buf, 64); n != 0 {
				t.Errorf("the masked file reads %d bytes, want none", n)
			}
			g.Call(unix.SYS_CLOSE, fd)
		}
		// A masked directory is an empty read-only tmpfs.
		if _, errno := openAt(g, "/etc/private/key", unix.O_RDONLY); errno != unix.ENOENT {
			t.Errorf("a file under a masked directory: %v, want ENOENT", errno)
		}
		if _, errno := openAt(g, "/etc/private/new", unix.O_CREAT|unix.O_WRONLY); errno != unix.EROFS {
			t.Errorf("create under a masked directory: %v, want EROFS", errno)
		}
		if _, errno := openAt(g, "/sys/firmware/x", unix.O_CREAT|unix.O_WRONLY); errno != unix.EROFS {
			t.Errorf("create under masked /sys/firmware: %v, want EROFS", errno)
		}
		// /proc/kcore and the like do not exist in the sandbox's /proc:
		// nothing was mounted there.
		if _, errno := openAt(g, "/proc/kcore", unix.O_RDONLY); errno != unix.ENOENT {
			t.Errorf("/proc/kcore: %v, want ENOENT", errno)
		}
	})
}

func TestPathRulesShowInMountinfoAsRuncMakesThem(t *testing.T) {
	s := pathRulesSandbox(t)
	var info string
	run(t, s, func(g *fake.Guest) {
		fd, _ := openAt(g, "/proc/self/mountinfo", unix.O_RDONLY)
		buf := g.Alloc(1 << 16)
		n, _ := g.Call(unix.SYS_READ, fd, buf, 1<<16)
		b := make([]byte, n)
		g.Read(buf, b)
		info = string(b)
	})
	want := map[string]string{
		// A read-only bind of /proc/sys: the proc mount's flags and ro,
		// its root the bound directory, its file system still rw.
		"/proc/sys":     "/sys /proc/sys ro,nosuid,nodev,noexec,relatime - proc proc rw",
		"/etc/secret":   "/null /etc/secret rw,nosuid,relatime - devtmpfs devtmpfs rw",
		"/sys/firmware": "/ /sys/firmware ro,relatime - tmpfs tmpfs ro",
	}
	for _, line := range strings.Split(info, "\n") {
		f := strings.SplitN(line, " ", 4)
		if len(f) < 4 {
			continue
		}
		rest := f[3]
		for point, w := range want {
			if strings.HasPrefix(rest, w[:strings.IndexByte(w, ' ')]+" "+point+" ") {
				if rest != w {
					t.Errorf("mountinfo for %s: %q, want %q", point, rest, w)
				}
				delete(want, point)
			}
		}
	}
	for point := range want {
		t.Errorf("no mountinfo line for %s in:\n%s", point, info)
	}
}
