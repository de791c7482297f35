package devfs_test

import (
	"testing"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/platform/fake"
	"github.com/moat-sandbox/moat/sentry/fs/devfs"
	"github.com/moat-sandbox/moat/sentry/fs/tmpfs"
	"github.com/moat-sandbox/moat/sentry/kernel/kerneltest"
	"github.com/moat-sandbox/moat/syscalls"
)

// sandbox mounts a /dev with nodes added, and a nodev tmpfs at /mnt.
func sandbox(t *testing.T, nodes []devfs.Node) *kerneltest.Sandbox {
	t.Helper()
	s := kerneltest.New(t, syscalls.NewTable())
	dev, err := devfs.New(unix.Timespec{}, nodes)
	if err != nil {
		t.Fatal(err)
	}
	s.Mount("/dev", dev, "devtmpfs", unix.MS_NOSUID)
	s.Mkdir("/mnt", 0o755)
	s.Mount("/mnt", tmpfs.New(s.Kernel.MemFile, tmpfs.DefaultOptions()), "tmpfs", unix.MS_NODEV)
	return s
}

// fdcwd is AT_FDCWD as a register holds it.
var fdcwd = func() uintptr { v := unix.AT_FDCWD; return uintptr(v) }()

func stat(t *testing.T, g *fake.Guest, name string) (unix.Stat_t, unix.Errno) {
	buf := g.Alloc(256)
	_, errno := g.Call(unix.SYS_NEWFSTATAT, fdcwd, g.CString(name), buf, 0)
	var st unix.Stat_t
	if errno == 0 {
		st.Mode = g.ReadU32(buf + 24)
		st.Uid, st.Gid = g.ReadU32(buf+28), g.ReadU32(buf+32)
		st.Rdev = g.ReadU64(buf + 40)
	}
	return st, errno
}

func open(g *fake.Guest, name string, flags int) (int, unix.Errno) {
	fd, errno := g.Call(unix.SYS_OPENAT, fdcwd, g.CString(name), uintptr(flags), 0)
	return int(fd), errno
}

func TestConfigDeviceNodesHaveTheirAttributesAndOpenAsTheirNumberSays(t *testing.T) {
	s := sandbox(t, []devfs.Node{
		{Path: "fuse", Mode: unix.S_IFCHR | 0o600, Rdev: unix.Mkdev(10, 229), UID: 5, GID: 6},
		{Path: "net/tun", Mode: unix.S_IFCHR | 0o666, Rdev: unix.Mkdev(10, 200)},
		{Path: "my-null", Mode: unix.S_IFCHR | 0o666, Rdev: unix.Mkdev(1, 3)},
		{Path: "sda", Mode: unix.S_IFBLK | 0o660, Rdev: unix.Mkdev(8, 0)},
		{Path: "null", Mode: unix.S_IFCHR | 0o620, Rdev: unix.Mkdev(1, 3), GID: 5},
	})
	s.Run(func(g *fake.Guest) {
		st, errno := stat(t, g, "/dev/fuse")
		if errno != 0 || st.Mode != unix.S_IFCHR|0o600 || st.Rdev != unix.Mkdev(10, 229) || st.Uid != 5 || st.Gid != 6 {
			t.Errorf("/dev/fuse: %v, mode %o rdev %#x owner %d:%d, want char 0600 10:229 5:6", errno, st.Mode, st.Rdev, st.Uid, st.Gid)
		}
		if st, errno := stat(t, g, "/dev/net/tun"); errno != 0 || st.Rdev != unix.Mkdev(10, 200) {
			t.Errorf("/dev/net/tun: %v rdev %#x, want 10:200 in a directory made for it", errno, st.Rdev)
		}
		if st, _ := stat(t, g, "/dev/null"); st.Mode != unix.S_IFCHR|0o620 || st.Gid != 5 {
			t.Errorf("/dev/null as the config gives it: mode %o gid %d, want 0620 and 5", st.Mode, st.Gid)
		}
		for _, name := range []string{"/dev/fuse", "/dev/net/tun", "/dev/sda"} {
			if _, errno := open(g, name, unix.O_RDWR); errno != unix.ENXIO {
				t.Errorf("open %s, a device the sandbox does not implement: %v, want ENXIO", name, errno)
			}
		}
		for _, name := range []string{"/dev/my-null", "/dev/null"} {
			fd, errno := open(g, name, unix.O_RDWR)
			if errno != 0 {
				t.Errorf("open %s (1:3): %v", name, errno)
				continue
			}
			buf := g.Alloc(8)
			if n, errno := g.Call(unix.SYS_WRITE, uintptr(fd), buf, 8); n != 8 || errno != 0 {
				t.Errorf("write to %s: %d, %v; want 8 bytes gone", name, n, errno)
			}
			if n, errno := g.Call(unix.SYS_READ, uintptr(fd), buf, 8); n != 0 || errno != 0 {
				t.Errorf("read of %s: %d, %v; want end of file", name, n, errno)
			}
		}
	})
}

func TestADeviceNodeMknodMadeOpensAsItsNumberSaysUnlessItsMountIsNodev(t *testing.T) {
	s := sandbox(t, nil)
	s.Run(func(g *fake.Guest) {
		for _, name := range []string{"/tmp/zero", "/mnt/zero"} {
			if _, errno := g.Call(unix.SYS_MKNODAT, fdcwd, g.CString(name), unix.S_IFCHR|0o666, uintptr(unix.Mkdev(1, 5))); errno != 0 {
				t.Fatalf("mknod %s 1:5: %v", name, errno)
			}
		}
		fd, errno := open(g, "/tmp/zero", unix.O_RDONLY)
		if errno != 0 {
			t.Fatalf("open /tmp/zero (1:5): %v", errno)
		}
		buf := g.Alloc(4)
		g.WriteU32(buf, 0xffffffff)
		if n, _ := g.Call(unix.SYS_READ, uintptr(fd), buf, 4); n != 4 || g.ReadU32(buf) != 0 {
			t.Errorf("read of a 1:5 node on tmpfs: %d bytes %#x, want 4 zero bytes", n, g.ReadU32(buf))
		}
		if _, errno := open(g, "/mnt/zero", unix.O_RDONLY); errno != unix.EACCES {
			t.Errorf("open of a device node on a nodev mount: %v, want EACCES", errno)
		}
		g.Call(unix.SYS_MKNODAT, fdcwd, g.CString("/tmp/loop0"), unix.S_IFBLK|0o660, uintptr(unix.Mkdev(7, 0)))
		if _, errno := open(g, "/tmp/loop0", unix.O_RDONLY); errno != unix.ENXIO {
			t.Errorf("open of a block device node: %v, want ENXIO", errno)
		}
	})
}

func TestANodeWhosePathGoesThroughAFileIsRefused(t *testing.T) {
	for _, path := range []string{"null/x", "fd/x", "pts"} {
		if _, err := devfs.New(unix.Timespec{}, []devfs.Node{{Path: path, Mode: unix.S_IFCHR | 0o666}}); err == nil {
			t.Errorf("a node at /dev/%s was taken", path)
		}
	}
}
