package syscalls

import (
	"testing"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/platform/fake"
)

// linux/fcntl.h's DN_ bits.
const (
	dnModify    = 0x2
	dnCreate    = 0x4
	dnAttrib    = 0x20
	dnMultishot = 0x80000000
)

// sigioPending takes a pending SIGIO (blocked by the caller) and reports
// whether there was one, and with SI_KERNEL.
func sigioPending(t *testing.T, g *fake.Guest, what string) bool {
	t.Helper()
	set := g.Alloc(8)
	g.WriteU64(set, 1<<(unix.SIGIO-1))
	info, ts := g.Alloc(128), g.Alloc(16)
	sig, errno := g.Call(unix.SYS_RT_SIGTIMEDWAIT, set, info, ts, 8)
	if errno == unix.EAGAIN {
		return false
	}
	if errno != 0 || sig != uintptr(unix.SIGIO) {
		t.Errorf("%s: rt_sigtimedwait = %d, %v", what, sig, errno)
		return false
	}
	if code := int32(g.ReadU32(info + 8)); code != 0x80 {
		t.Errorf("%s: SIGIO's si_code %#x, want SI_KERNEL", what, code)
	}
	return true
}

func TestFNotifySignalsTheProcessOnceOrUntilTheDescriptorCloses(t *testing.T) {
	runGuest(t, func(g *fake.Guest) {
		set := g.Alloc(8)
		g.WriteU64(set, 1<<(unix.SIGIO-1))
		g.Call(unix.SYS_RT_SIGPROCMASK, unix.SIG_BLOCK, set, 0, 8)
		g.Call(unix.SYS_MKDIR, g.CString("/tmp/d"), 0o777)
		d, _ := g.Call(unix.SYS_OPEN, g.CString("/tmp/d"), unix.O_RDONLY|unix.O_DIRECTORY)
		create := func(name string) uintptr {
			fd, errno := g.Call(unix.SYS_OPEN, g.CString("/tmp/d/"+name), unix.O_CREAT|unix.O_RDWR, 0o644)
			if errno != 0 {
				t.Errorf("creating %s: %v", name, errno)
			}
			return fd
		}
		f := create("f")
		_, errno := g.Call(unix.SYS_FCNTL, f, unix.F_NOTIFY, dnCreate)
		expectErrno(t, "F_NOTIFY on a regular file", 0, errno, unix.ENOTDIR)

		_, errno = g.Call(unix.SYS_FCNTL, d, unix.F_NOTIFY, dnCreate)
		expectErrno(t, "F_NOTIFY(DN_CREATE)", 0, errno, 0)
		g.Call(unix.SYS_CLOSE, create("a"))
		if !sigioPending(t, g, "a create") {
			t.Errorf("no SIGIO after a create in the directory")
		}
		g.Call(unix.SYS_CLOSE, create("b"))
		if sigioPending(t, g, "a second create") {
			t.Errorf("SIGIO after a second create: a request without DN_MULTISHOT fires once")
		}

		_, errno = g.Call(unix.SYS_FCNTL, d, unix.F_NOTIFY, dnModify|dnMultishot)
		expectErrno(t, "F_NOTIFY(DN_MODIFY|DN_MULTISHOT)", 0, errno, 0)
		g.Call(unix.SYS_CLOSE, create("c"))
		if sigioPending(t, g, "a create watched for modifications only") {
			t.Errorf("SIGIO after a create, with DN_MODIFY alone asked for")
		}
		buf := g.CString("x")
		for i := range 2 {
			g.Call(unix.SYS_WRITE, f, buf, 1)
			if !sigioPending(t, g, "a write") {
				t.Errorf("no SIGIO after write %d to a file of the directory, with DN_MULTISHOT", i+1)
			}
		}
		// A second request through the same descriptor adds its events.
		g.Call(unix.SYS_FCNTL, d, unix.F_NOTIFY, dnAttrib)
		g.Call(unix.SYS_FCHMOD, d, 0o755)
		if !sigioPending(t, g, "a chmod of the directory") {
			t.Errorf("no SIGIO after the directory's chmod, with DN_ATTRIB added")
		}
		g.Call(unix.SYS_WRITE, f, buf, 1)
		if !sigioPending(t, g, "a write after DN_ATTRIB was added") {
			t.Errorf("no SIGIO after a write: adding DN_ATTRIB dropped DN_MODIFY or DN_MULTISHOT")
		}
		// Closing any descriptor of the file ends the request.
		dup, _ := g.Call(unix.SYS_DUP, d)
		g.Call(unix.SYS_CLOSE, dup)
		g.Call(unix.SYS_WRITE, f, buf, 1)
		if sigioPending(t, g, "a write after a dup was closed") {
			t.Errorf("SIGIO after closing a duplicate of the directory's descriptor")
		}
		g.Call(unix.SYS_FCNTL, d, unix.F_NOTIFY, dnModify|dnMultishot)
		_, errno = g.Call(unix.SYS_FCNTL, d, unix.F_NOTIFY, 0)
		expectErrno(t, "F_NOTIFY(0)", 0, errno, 0)
		g.Call(unix.SYS_WRITE, f, buf, 1)
		if sigioPending(t, g, "a write after F_NOTIFY(0)") {
			t.Errorf("SIGIO after F_NOTIFY(0) ended the request")
		}
	})
}
