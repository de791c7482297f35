package unixsock_test

import (
	"encoding/binary"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/platform/fake"
)

// guest wraps a test's guest program with the socket calls the tests make.
type guest struct {
	*fake.Guest
	t *testing.T
}

// must makes a call that the test needs to succeed, reporting it if not.
func (g guest) must(what string, nr uintptr, args ...uintptr) uintptr {
	r, errno := g.Call(nr, args...)
	if errno != 0 {
		g.t.Errorf("%s: %v", what, errno)
	}
	return r
}

// sockaddr puts a sockaddr_un naming path (a leading NUL: abstract) in
// guest memory; the length is the family and the name, no NUL after.
func (g guest) sockaddr(path string) (uintptr, uintptr) {
	b := append([]byte{unix.AF_UNIX, 0}, path...)
	addr := g.Alloc(uintptr(len(b) + 1))
	g.Write(addr, append(b, 0))
	return addr, uintptr(len(b))
}

// socket makes an AF_UNIX socket of typ.
func (g guest) socket(typ int) uintptr {
	return g.must("socket", unix.SYS_SOCKET, unix.AF_UNIX, uintptr(typ), 0)
}

// pair makes a socketpair of typ.
func (g guest) pair(typ int) (uintptr, uintptr) {
	sv := g.Alloc(8)
	g.must("socketpair", unix.SYS_SOCKETPAIR, unix.AF_UNIX, uintptr(typ), 0, sv)
	return uintptr(g.ReadU32(sv)), uintptr(g.ReadU32(sv + 4))
}

// write sends s on fd and returns the count or the errno.
func (g guest) write(fd uintptr, s string) (uintptr, unix.Errno) {
	buf := g.Alloc(uintptr(len(s) + 1))
	g.Write(buf, []byte(s))
	return g.Call(unix.SYS_WRITE, fd, buf, uintptr(len(s)))
}

// read reads at most n bytes from fd with recvfrom's flags.
func (g guest) read(fd uintptr, n int, flags int) (string, unix.Errno) {
	buf := g.Alloc(uintptr(n + 1))
	r, errno := g.Call(unix.SYS_RECVFROM, fd, buf, uintptr(n), uintptr(flags), 0, 0)
	if errno != 0 {
		return "", errno
	}
	out := make([]byte, r)
	g.Read(buf, out)
	return string(out), 0
}

// cmsg is one control message to send or one received.
type cmsg struct {
	level, typ int
	data       []byte
}

func fdsData(fds ...int32) []byte {
	var b []byte
	for _, fd := range fds {
		b = binary.LittleEndian.AppendUint32(b, uint32(fd))
	}
	return b
}

func credsData(pid int32, uid, gid uint32) []byte {
	b := binary.LittleEndian.AppendUint32(nil, uint32(pid))
	b = binary.LittleEndian.AppendUint32(b, uid)
	return binary.LittleEndian.AppendUint32(b, gid)
}

// sendmsg sends data with control messages.
func (g guest) sendmsg(fd uintptr, data string, flags int, cms ...cmsg) (uintptr, unix.Errno) {
	var ctl []byte
	for _, c := range cms {
		h := binary.LittleEndian.AppendUint64(nil, uint64(16+len(c.data)))
		h = binary.LittleEndian.AppendUint32(h, uint32(c.level))
		h = binary.LittleEndian.AppendUint32(h, uint32(c.typ))
		h = append(h, c.data...)
		for len(h)%8 != 0 {
			h = append(h, 0)
		}
		ctl = append(ctl, h...)
	}
	buf := g.Alloc(uintptr(len(data) + 1))
	g.Write(buf, []byte(data))
	iov := g.Alloc(16)
	g.WriteU64(iov, uint64(buf))
	g.WriteU64(iov+8, uint64(len(data)))
	msg := g.Alloc(56)
	g.WriteU64(msg+16, uint64(iov))
	g.WriteU64(msg+24, 1)
	if len(ctl) > 0 {
		c := g.Alloc(uintptr(len(ctl)))
		g.Write(c, ctl)
		g.WriteU64(msg+32, uint64(c))
		g.WriteU64(msg+40, uint64(len(ctl)))
	}
	return g.Call(unix.SYS_SENDMSG, fd, msg, uintptr(flags))
}

// received is what recvmsg gave.
type received struct {
	n        int
	data     string
	name     []byte
	flags    int
	cmsgs    []cmsg
	errno    unix.Errno
	ctlBytes int
}

// recvmsg receives into a buffer of n bytes with room for ctlRoom bytes
// of control data.
func (g guest) recvmsg(fd uintptr, n, ctlRoom, flags int) received {
	buf := g.Alloc(uintptr(n + 1))
	iov := g.Alloc(16)
	g.WriteU64(iov, uint64(buf))
	g.WriteU64(iov+8, uint64(n))
	msg := g.Alloc(56)
	name := g.Alloc(128)
	g.WriteU64(msg, uint64(name))
	g.WriteU32(msg+8, 128)
	g.WriteU64(msg+16, uint64(iov))
	g.WriteU64(msg+24, 1)
	var ctl uintptr
	if ctlRoom > 0 {
		ctl = g.Alloc(uintptr(ctlRoom))
		g.WriteU64(msg+32, uint64(ctl))
		g.WriteU64(msg+40, uint64(ctlRoom))
	}
	r, errno := g.Call(unix.SYS_RECVMSG, fd, msg, uintptr(flags))
	if errno != 0 {
		return received{errno: errno}
	}
	out := received{n: int(r)}
	data := make([]byte, min(int(r), n))
	g.Read(buf, data)
	out.data = string(data)
	nameLen := g.ReadU32(msg + 8)
	out.name = make([]byte, min(nameLen, 128))
	g.Read(name, out.name)
	out.flags = int(int32(g.ReadU32(msg + 48)))
	cl := int(g.ReadU64(msg + 40))
	out.ctlBytes = cl
	raw := make([]byte, cl)
	if cl > 0 {
		g.Read(ctl, raw)
	}
	for len(raw) >= 16 {
		l := int(binary.LittleEndian.Uint64(raw))
		if l < 16 || l > len(raw) {
			break
		}
		out.cmsgs = append(out.cmsgs, cmsg{level: int(binary.LittleEndian.Uint32(raw[8:])),
			typ: int(binary.LittleEndian.Uint32(raw[12:])), data: append([]byte(nil), raw[16:l]...)})
		next := (l + 7) &^ 7
		if next >= len(raw) {
			break
		}
		raw = raw[next:]
	}
	return out
}

// rights returns the fds of a received SCM_RIGHTS message.
func (r received) rights() []int32 {
	var fds []int32
	for _, c := range r.cmsgs {
		if c.level == unix.SOL_SOCKET && c.typ == unix.SCM_RIGHTS {
			for i := 0; i+4 <= len(c.data); i += 4 {
				fds = append(fds, int32(binary.LittleEndian.Uint32(c.data[i:])))
			}
		}
	}
	return fds
}

// creds returns the pid, uid and gid of a received SCM_CREDENTIALS
// message, ok false if there is none.
func (r received) creds() (pid int32, uid, gid uint32, ok bool) {
	for _, c := range r.cmsgs {
		if c.level == unix.SOL_SOCKET && c.typ == unix.SCM_CREDENTIALS && len(c.data) == 12 {
			return int32(binary.LittleEndian.Uint32(c.data)), binary.LittleEndian.Uint32(c.data[4:]),
				binary.LittleEndian.Uint32(c.data[8:]), true
		}
	}
	return 0, 0, 0, false
}

// poll returns the events poll reports on fd for events, at once.
func (g guest) poll(fd uintptr, events int16) int16 {
	p := g.Alloc(8)
	g.WriteU32(p, uint32(fd))
	g.Write(p+4, []byte{byte(events), byte(uint16(events) >> 8), 0, 0})
	g.must("poll", unix.SYS_POLL, p, 1, 0)
	b := make([]byte, 2)
	g.Read(p+6, b)
	return int16(binary.LittleEndian.Uint16(b))
}

// intOpt reads an int socket option.
func (g guest) intOpt(fd uintptr, level, name int) (int32, unix.Errno) {
	v := g.Alloc(8)
	l := g.Alloc(4)
	g.WriteU32(l, 4)
	if _, errno := g.Call(unix.SYS_GETSOCKOPT, fd, uintptr(level), uintptr(name), v, l); errno != 0 {
		return 0, errno
	}
	return int32(g.ReadU32(v)), 0
}

// setInt sets an int socket option.
func (g guest) setInt(fd uintptr, level, name int, val int32) unix.Errno {
	v := g.Alloc(4)
	g.WriteU32(v, uint32(val))
	_, errno := g.Call(unix.SYS_SETSOCKOPT, fd, uintptr(level), uintptr(name), v, 4)
	return errno
}
