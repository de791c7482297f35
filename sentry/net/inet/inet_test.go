package inet_test

import (
	"encoding/binary"
	"fmt"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/platform/fake"
	"github.com/moat-sandbox/moat/sentry/fs/procfs"
	"github.com/moat-sandbox/moat/sentry/kernel/kerneltest"
	"github.com/moat-sandbox/moat/syscalls"
)

type guest struct {
	*fake.Guest
	t *testing.T
}

func (g guest) must(what string, nr uintptr, args ...uintptr) uintptr {
	r, errno := g.Call(nr, args...)
	if errno != 0 {
		g.t.Errorf("%s: %v", what, errno)
	}
	return r
}

// sin puts a sockaddr_in for 127.0.0.1:port in guest memory.
func (g guest) sin(port uint16) (uintptr, uintptr) {
	b := make([]byte, 16)
	binary.LittleEndian.PutUint16(b, unix.AF_INET)
	binary.BigEndian.PutUint16(b[2:], port)
	copy(b[4:], []byte{127, 0, 0, 1})
	a := g.Alloc(16)
	g.Write(a, b)
	return a, 16
}

// sin6 puts a sockaddr_in6 for [::1]:port in guest memory.
func (g guest) sin6(port uint16) (uintptr, uintptr) {
	b := make([]byte, 28)
	binary.LittleEndian.PutUint16(b, unix.AF_INET6)
	binary.BigEndian.PutUint16(b[2:], port)
	b[23] = 1
	a := g.Alloc(28)
	g.Write(a, b)
	return a, 28
}

// port returns the port getsockname gives fd.
func (g guest) port(fd uintptr) uint16 {
	a := g.Alloc(128)
	l := g.Alloc(4)
	g.WriteU32(l, 128)
	g.must("getsockname", unix.SYS_GETSOCKNAME, fd, a, l)
	b := make([]byte, 4)
	g.Read(a, b)
	return binary.BigEndian.Uint16(b[2:])
}

func (g guest) send(fd uintptr, s string) (uintptr, unix.Errno) {
	buf := g.Alloc(uintptr(len(s) + 1))
	g.Write(buf, []byte(s))
	return g.Call(unix.SYS_SENDTO, fd, buf, uintptr(len(s)), 0, 0, 0)
}

func (g guest) recv(fd uintptr, n, flags int) (string, unix.Errno) {
	buf := g.Alloc(uintptr(n + 1))
	r, errno := g.Call(unix.SYS_RECVFROM, fd, buf, uintptr(n), uintptr(flags), 0, 0)
	if errno != 0 {
		return "", errno
	}
	out := make([]byte, r)
	g.Read(buf, out)
	return string(out), 0
}

func run(t *testing.T, main func(g guest)) {
	s := kerneltest.New(t, syscalls.NewTable())
	if st := s.Run(func(fg *fake.Guest) { main(guest{fg, t}) }); st.Code != 0 || st.Signo != 0 {
		t.Errorf("guest ended %+v; log:\n%s", st, s.Log())
	}
}

// TestTCPOverLoopbackConnectsAcceptsAndCarriesBytes: a listener on
// 127.0.0.1 with an ephemeral port takes a connection from another
// process; bytes go both ways; the peer's close is the end of the stream.
func TestTCPOverLoopbackConnectsAcceptsAndCarriesBytes(t *testing.T) {
	run(t, func(g guest) {
		l := g.must("socket", unix.SYS_SOCKET, unix.AF_INET, unix.SOCK_STREAM, 0)
		a, n := g.sin(0)
		g.must("bind", unix.SYS_BIND, l, a, n)
		g.must("listen", unix.SYS_LISTEN, l, 8)
		port := g.port(l)
		if port == 0 {
			t.Errorf("no ephemeral port")
		}
		child, _ := g.Fork(func(fg *fake.Guest) {
			cg := guest{fg, t}
			c := cg.must("socket", unix.SYS_SOCKET, unix.AF_INET, unix.SOCK_STREAM, 0)
			ca, cn := cg.sin(port)
			cg.must("connect", unix.SYS_CONNECT, c, ca, cn)
			cg.send(c, "ping")
			if got, _ := cg.recv(c, 64, 0); got != "pong" {
				t.Errorf("client read %q", got)
			}
		})
		s := g.must("accept", unix.SYS_ACCEPT, l, 0, 0)
		if got, _ := g.recv(s, 4, unix.MSG_WAITALL); got != "ping" {
			t.Errorf("server read %q", got)
		}
		g.send(s, "pong")
		if got, errno := g.recv(s, 64, 0); got != "" || errno != 0 {
			t.Errorf("read after the client's exit %q %v, want the end", got, errno)
		}
		g.Wait(child, 0)
	})
}

// TestUDPOverIPv6LoopbackKeepsDatagrams: sendto and recvfrom on ::1,
// with the sender's address, and MSG_TRUNC for a short buffer.
func TestUDPOverIPv6LoopbackKeepsDatagrams(t *testing.T) {
	run(t, func(g guest) {
		r := g.must("socket", unix.SYS_SOCKET, unix.AF_INET6, unix.SOCK_DGRAM, 0)
		a, n := g.sin6(0)
		g.must("bind", unix.SYS_BIND, r, a, n)
		to, tn := g.sin6(g.port(r))
		s := g.must("socket", unix.SYS_SOCKET, unix.AF_INET6, unix.SOCK_DGRAM, 0)
		buf := g.Alloc(64)
		g.Write(buf, []byte("datagram"))
		g.must("sendto", unix.SYS_SENDTO, s, buf, 8, 0, to, tn)
		g.must("sendto", unix.SYS_SENDTO, s, buf, 4, 0, to, tn)
		if got, _ := g.recv(r, 64, 0); got != "datagram" {
			t.Errorf("read %q", got)
		}
		if n, errno := g.Call(unix.SYS_RECVFROM, r, buf, 2, unix.MSG_TRUNC, 0, 0); n != 4 || errno != 0 {
			t.Errorf("MSG_TRUNC read %d %v, want the length 4", n, errno)
		}
		if _, errno := g.recv(r, 64, unix.MSG_DONTWAIT); errno != unix.EAGAIN {
			t.Errorf("empty read %v", errno)
		}
	})
}

// TestConnectToAClosedPortIsRefusedAndNonblockingConnectIsInProgress.
func TestConnectToAClosedPortIsRefusedAndNonblockingConnectIsInProgress(t *testing.T) {
	run(t, func(g guest) {
		c := g.must("socket", unix.SYS_SOCKET, unix.AF_INET, unix.SOCK_STREAM, 0)
		a, n := g.sin(9)
		if _, errno := g.Call(unix.SYS_CONNECT, c, a, n); errno != unix.ECONNREFUSED {
			t.Errorf("connect to a closed port: %v", errno)
		}
		l := g.must("socket", unix.SYS_SOCKET, unix.AF_INET, unix.SOCK_STREAM, 0)
		la, ln := g.sin(0)
		g.must("bind", unix.SYS_BIND, l, la, ln)
		g.must("listen", unix.SYS_LISTEN, l, 1)
		nb := g.must("socket", unix.SYS_SOCKET, unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_NONBLOCK, 0)
		ta, tn := g.sin(g.port(l))
		if _, errno := g.Call(unix.SYS_CONNECT, nb, ta, tn); errno != unix.EINPROGRESS {
			t.Errorf("non-blocking connect: %v", errno)
		}
		deadline := time.Now().Add(5 * time.Second)
		for {
			p := g.Alloc(8)
			g.WriteU32(p, uint32(nb))
			g.Write(p+4, []byte{unix.POLLOUT, 0})
			g.Call(unix.SYS_POLL, p, 1, 100)
			b := make([]byte, 2)
			g.Read(p+6, b)
			if b[0]&unix.POLLOUT != 0 || time.Now().After(deadline) {
				break
			}
		}
		v := g.Alloc(4)
		vl := g.Alloc(4)
		g.WriteU32(vl, 4)
		g.must("SO_ERROR", unix.SYS_GETSOCKOPT, nb, unix.SOL_SOCKET, unix.SO_ERROR, v, vl)
		if e := g.ReadU32(v); e != 0 {
			t.Errorf("SO_ERROR after the connection %d", e)
		}
		// As Linux's inet_stream_connect: the first connect after the
		// handshake completes it (0), a later one is EISCONN.
		if _, errno := g.Call(unix.SYS_CONNECT, nb, ta, tn); errno != 0 {
			t.Errorf("connect once connected: %v, want success", errno)
		}
		if _, errno := g.Call(unix.SYS_CONNECT, nb, ta, tn); errno != unix.EISCONN {
			t.Errorf("connect again: %v, want EISCONN", errno)
		}
	})
}

// TestProcNetShowsSocketsAsLinuxPrintsThem: /proc/net/tcp lists a
// listener on 127.0.0.1 (0100007F) with its port, state LISTEN (0A) and
// its socket's inode; /proc/net/unix a bound AF_UNIX socket's name.
func TestProcNetShowsSocketsAsLinuxPrintsThem(t *testing.T) {
	s := kerneltest.New(t, syscalls.NewTable())
	s.Mkdir("/proc", 0o555)
	s.Mount("/proc", procfs.New(s.Kernel, s.Kernel.RootPIDNamespace()), "proc", 0)
	st := s.Run(func(fg *fake.Guest) {
		g := guest{fg, t}
		l := g.must("socket", unix.SYS_SOCKET, unix.AF_INET, unix.SOCK_STREAM, 0)
		a, n := g.sin(0)
		g.must("bind", unix.SYS_BIND, l, a, n)
		g.must("listen", unix.SYS_LISTEN, l, 8)
		port := g.port(l)
		sb := g.Alloc(256)
		g.must("fstat", unix.SYS_FSTAT, l, sb)
		ino := g.ReadU64(sb + 8)
		u := g.must("socket", unix.SYS_SOCKET, unix.AF_UNIX, unix.SOCK_STREAM, 0)
		ua := g.Alloc(16)
		g.Write(ua, append([]byte{unix.AF_UNIX, 0}, "/tmp/u.sock"...))
		g.must("bind", unix.SYS_BIND, u, ua, 13)
		tcp := g.readFile("/proc/net/tcp")
		want := fmt.Sprintf("0100007F:%04X 00000000:0000 0A", port)
		if !strings.Contains(tcp, want) || !strings.Contains(tcp, fmt.Sprintf(" %d ", ino)) {
			t.Errorf("/proc/net/tcp has no %q with inode %d:\n%s", want, ino, tcp)
		}
		if lines := strings.Split(tcp, "\n"); len(lines[0]) != 149 {
			t.Errorf("/proc/net/tcp's header is %d characters, want Linux's 149", len(lines[0]))
		}
		if un := g.readFile("/proc/net/unix"); !strings.Contains(un, " /tmp/u.sock\n") {
			t.Errorf("/proc/net/unix:\n%s", un)
		}
		if v := g.readFile("/proc/sys/net/ipv4/ip_local_port_range"); v != "32768\t60999\n" {
			t.Errorf("ip_local_port_range %q", v)
		}
	})
	if st.Code != 0 || st.Signo != 0 {
		t.Errorf("guest ended %+v; log:\n%s", st, s.Log())
	}
}

// readFile reads a whole file in the guest.
func (g guest) readFile(name string) string {
	fd, errno := g.Call(unix.SYS_OPEN, g.CString(name), unix.O_RDONLY)
	if errno != 0 {
		g.t.Errorf("open %s: %v", name, errno)
		return ""
	}
	defer g.Call(unix.SYS_CLOSE, fd)
	buf := g.Alloc(1 << 16)
	var out []byte
	for {
		n, errno := g.Call(unix.SYS_READ, fd, buf, 1<<16)
		if errno != 0 || n == 0 {
			break
		}
		b := make([]byte, n)
		g.Read(buf, b)
		out = append(out, b...)
	}
	return string(out)
}

// TestFchmodAndFchownChangeAnInetSocketsInode: as any socket's, its
// sockfs inode takes a mode and an owner.
func TestFchmodAndFchownChangeAnInetSocketsInode(t *testing.T) {
	run(t, func(g guest) {
		s := g.must("socket", unix.SYS_SOCKET, unix.AF_INET, unix.SOCK_DGRAM, 0)
		g.must("fchmod", unix.SYS_FCHMOD, s, 0o644)
		g.must("fchown", unix.SYS_FCHOWN, s, 1234, ^uintptr(0))
		st := g.Alloc(144)
		g.must("fstat", unix.SYS_FSTAT, s, st)
		if mode, uid := g.ReadU32(st+24), g.ReadU32(st+28); mode != unix.S_IFSOCK|0o644 || uid != 1234 {
			t.Errorf("after fchmod 0644 and fchown 1234: mode %#o uid %d", mode, uid)
		}
	})
}
