package systrap

import (
	"encoding/binary"
	"fmt"
	"maps"
	"slices"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/platform"
)

// Host files' pages (platform.HostFileMapper): a guest mapping of a
// read-only image file is the stub's own mmap of the host file, so that
// every sandbox of an image shares the host's page cache of it, as runc's
// containers do. A stub starts with no host file open; the sentry sends it
// the descriptors its mappings need (descriptors the gofer opened for the
// guest, read-only) over a socket every stub inherits, and the stub's
// syscall thread receives them (recvmsg, the only one its filter allows, on
// that socket alone) in the request that maps them.
//
// The stub closes no descriptor and opens none but those it receives, so
// the sentry knows its descriptor table: the kernel gives each received
// descriptor the lowest free number, which the sentry predicts and checks.
// A guest thread can write the result page where the message lands, and so
// make its own stub map the wrong image file or none; that harms only the
// guest itself, which may read every image file anyway.

// maxFDsPerMessage bounds the descriptors one request receives.
const maxFDsPerMessage = 64

// hostFDSocket is the socket pair descriptors reach stubs on.
type hostFDSocket struct {
	// mu holds one message in flight at a time: every stub shares
	// stubEnd, and the one asked to receive must get what was sent for it.
	mu        sync.Mutex
	sentryEnd int // the sentry sends on it
	stubEnd   int // every stub holds it; the sentry drains it after a failure
}

// open makes the socket pair; it must run before the source stub is forked.
func (s *hostFDSocket) open() error {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("systrap: socket for host files' descriptors: %w", err)
	}
	s.sentryEnd, s.stubEnd = fds[0], fds[1]
	return nil
}

func (s *hostFDSocket) close() {
	unix.Close(s.sentryEnd)
	unix.Close(s.stubEnd)
}

// MapHostFiles implements platform.HostFileMapper. It must be called before
// any address space maps memory.
func (p *Platform) MapHostFiles(h platform.HostFiles) { p.hostFiles = h }

var _ platform.HostFileMapper = (*Platform)(nil)

// stubFDs is what one stub holds of host files: the number it holds each
// of the sentry's descriptors as, and every number taken in it.
type stubFDs struct {
	num  map[int]int
	used map[int]bool
}

// fresh is the table of a stub that holds nothing but what every stub does.
func (p *Platform) freshFDs() stubFDs {
	return stubFDs{num: map[int]int{}, used: map[int]bool{p.ctl.fd: true, p.memFD: true, p.fds.stubEnd: true}}
}

func (t stubFDs) clone() stubFDs {
	return stubFDs{num: maps.Clone(t.num), used: maps.Clone(t.used)}
}

// assign numbers fd as the lowest number free in the stub, as the kernel
// will when the stub receives it.
func (t stubFDs) assign(fd int) int {
	n := 0
	for t.used[n] {
		n++
	}
	t.num[fd], t.used[n] = n, true
	return n
}

// stubFDLocked returns the number the stub holds the sentry's descriptor
// fd as, assigning one (and marking fd to be sent with the next flush) if
// the stub does not hold it yet. It fails past the stub's descriptor
// limit.
func (as *addressSpace) stubFDLocked(fd int) (int, error) {
	if n, ok := as.fds.num[fd]; ok {
		return n, nil
	}
	if len(as.fds.used) >= as.p.maxStubFDs {
		return 0, unix.EMFILE
	}
	as.unsent = append(as.unsent, fd)
	return as.fds.assign(fd), nil
}

// The source stub receives every descriptor an address space was sent, in
// the background, so that stubs cloned from it later start with them: a
// fork's child then maps its parent's libraries at once.

// cloneFDs holds the source's table while fn clones a stub from it, and
// returns a copy of the table, the new stub's.
func (p *Platform) cloneFDs(fn func() error) (stubFDs, error) {
	p.srcMu.Lock()
	defer p.srcMu.Unlock()
	return p.srcFDs.clone(), fn()
}

// shareWithSource sends the source stub those of fds it lacks.
func (p *Platform) shareWithSource(fds []int) {
	p.srcMu.Lock()
	defer p.srcMu.Unlock()
	if p.srcBroken {
		return
	}
	var send, want []int
	for _, fd := range fds {
		if _, ok := p.srcFDs.num[fd]; !ok && len(p.srcFDs.used) < p.maxStubFDs {
			send = append(send, fd)
			want = append(want, p.srcFDs.assign(fd))
		}
	}
	if len(send) == 0 {
		return
	}
	if err := p.fds.sendAndCall(p.source, aheadOfNeed, send, want, nil); err != nil {
		// The source's table is no longer known: stubs cloned from it
		// would hold descriptors the sentry cannot account for.
		p.srcBroken = true
	}
}

// sendAndCall sends the descriptors fds to stub s and has it receive them
// (as the numbers first, first+1, ... in order) before it executes ops.
func (sock *hostFDSocket) sendAndCall(s *stubProcess, u urgency, fds, want []int, ops []op) error {
	sock.mu.Lock()
	defer sock.mu.Unlock()
	if err := unix.Sendmsg(sock.sentryEnd, []byte{0}, unix.UnixRights(fds...), nil, unix.MSG_DONTWAIT); err != nil {
		return fmt.Errorf("systrap: send host files' descriptors: %w", err)
	}
	c := s.p.ctl
	res := s.unit + 4096
	cmsgLen := uint64(unix.CmsgSpace(4 * len(fds)))
	hdr := unsafe.Slice((*byte)(unsafe.Pointer(c.u64(res+resMsghdr))), 56)
	le := binary.LittleEndian
	clear(hdr)
	le.PutUint64(hdr[16:], resultVA+resIovec) // msg_iov
	le.PutUint64(hdr[24:], 1)                 // msg_iovlen
	le.PutUint64(hdr[32:], resultVA+resCmsg)  // msg_control
	le.PutUint64(hdr[40:], cmsgLen)           // msg_controllen
	*c.u64(res + resIovec) = resultVA + resMsgByte
	*c.u64(res + resIovec + 8) = 1
	recv := op{nr: unix.SYS_RECVMSG, args: [6]uint64{uint64(sock.stubEnd), resultVA + resMsghdr,
		unix.MSG_DONTWAIT | unix.MSG_CMSG_CLOEXEC}}
	_, err := s.call(u, append([]op{recv}, ops...)...)
	if err != nil {
		sock.drainLocked()
		return err
	}
	// What the stub received, as its result page says.
	if le.Uint32(hdr[48:])&unix.MSG_CTRUNC != 0 {
		return fmt.Errorf("systrap: a stub received its host files' descriptors truncated")
	}
	n := min(le.Uint64(hdr[40:]), cmsgLen)
	msgs, err := unix.ParseSocketControlMessage(unsafe.Slice((*byte)(unsafe.Pointer(c.u64(res+resCmsg))), n))
	if err != nil || len(msgs) != 1 {
		return fmt.Errorf("systrap: a stub's received descriptors do not parse: %v", err)
	}
	got, err := unix.ParseUnixRights(&msgs[0])
	if err != nil || !slices.Equal(got, want) {
		return fmt.Errorf("systrap: a stub received host files' descriptors as %v, not %v", got, want)
	}
	return nil
}

// drainLocked takes back a message no stub received (a stub that died
// first), so that the next stub does not receive it in place of its own.
func (sock *hostFDSocket) drainLocked() {
	buf, oob := make([]byte, 1), make([]byte, unix.CmsgSpace(4*maxFDsPerMessage))
	for range 4 {
		_, oobn, _, _, err := unix.Recvmsg(sock.stubEnd, buf, oob, unix.MSG_DONTWAIT|unix.MSG_CMSG_CLOEXEC)
		if err != nil {
			return
		}
		msgs, _ := unix.ParseSocketControlMessage(oob[:oobn])
		for i := range msgs {
			fds, _ := unix.ParseUnixRights(&msgs[i])
			for _, fd := range fds {
				unix.Close(fd)
			}
		}
	}
}
