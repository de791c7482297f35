package inet

import (
	"encoding/binary"
	"io"

	"golang.org/x/sys/unix"
	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/transport/tcp"

	"github.com/moat-sandbox/moat/internal/linuxabi"
	"github.com/moat-sandbox/moat/sentry/kernel"
	"github.com/moat-sandbox/moat/sentry/net/netstack"
	"github.com/moat-sandbox/moat/sentry/net/socket"
	"github.com/moat-sandbox/moat/sentry/vfs"
	"github.com/moat-sandbox/moat/sentry/waiter"
)

// reader hands netstack the guest's data (tcpip.Payloader).
type reader struct {
	src *vfs.IOSeq
	off int
	err error
}

func (r *reader) Read(p []byte) (int, error) {
	if r.Len() == 0 {
		return 0, io.EOF
	}
	p = p[:min(len(p), r.Len())]
	if len(p) == 0 {
		return 0, nil
	}
	n, err := r.src.Skip(r.off).CopyIn(p)
	r.off += n
	if n < len(p) {
		if err == nil {
			err = unix.EFAULT
		}
		r.err = err
		return n, err
	}
	return n, nil
}

func (r *reader) Len() int { return r.src.Len() - r.off }

// writer takes what netstack reads into the guest's buffers.
type writer struct {
	dst *vfs.IOSeq
	off int
}

func (w *writer) Write(p []byte) (int, error) {
	n, err := w.dst.Skip(w.off).CopyOut(p)
	w.off += n
	if n < len(p) {
		if err == nil {
			err = io.ErrShortWrite
		}
		return n, err
	}
	return n, nil
}

// discard takes data MSG_TRUNC throws away.
type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

func taskOf(s *vfs.IOSeq) *kernel.Task {
	t, _ := s.Context().(*kernel.Task)
	return t
}

// Write implements vfs.FileImpl.
func (s *sock) Write(src *vfs.IOSeq, _ int64) (int, error) {
	flags := 0
	if src.NonBlocking() {
		flags = unix.MSG_DONTWAIT
	}
	if src.NoSignal() {
		flags |= unix.MSG_NOSIGNAL
	}
	return s.SendMsg(taskOf(src), src, &socket.SendMessage{Flags: flags})
}

// Read implements vfs.FileImpl. A read of nothing gives 0 at once, data
// queued or not (socket.ZeroRead).
func (s *sock) Read(dst *vfs.IOSeq, _ int64) (int, error) {
	if socket.ZeroRead(dst) {
		return 0, nil
	}
	m := &socket.RecvMessage{}
	if dst.NonBlocking() {
		m.Flags = unix.MSG_DONTWAIT
	}
	return s.RecvMsg(taskOf(dst), dst, m)
}

// SendMsg implements socket.Socket: a stream socket sends all of the
// data unless non-blocking or interrupted (then what went), a datagram
// one a message at a time. What a TCP socket sends to a peer in this
// stack has reached it when SendMsg returns, as over Linux's loopback
// (loopback.go).
func (s *sock) SendMsg(t *kernel.Task, src *vfs.IOSeq, m *socket.SendMessage) (int, error) {
	p := s.localPeer()
	if p == nil {
		return s.send(t, src, m)
	}
	mark := s.markSend(p)
	n, err := s.send(t, src, m)
	s.settle(p, mark)
	return n, err
}

func (s *sock) send(t *kernel.Task, src *vfs.IOSeq, m *socket.SendMessage) (int, error) {
	if m.Flags&unix.MSG_OOB != 0 && s.typ != unix.SOCK_STREAM {
		return 0, unix.EOPNOTSUPP
	}
	if m.Flags&unix.MSG_FASTOPEN != 0 && s.typ == unix.SOCK_STREAM {
		if err := s.fastOpen(t, m); err != nil {
			return 0, err
		}
	}
	s.sizeSendBuffer()
	opts := tcpip.WriteOptions{More: m.Flags&unix.MSG_MORE != 0, EndOfRecord: m.Flags&unix.MSG_EOR != 0}
	if m.To != nil && s.typ != unix.SOCK_STREAM {
		fa, err := s.parseAddr(m.To)
		if err != nil {
			return 0, err
		}
		fa = s.anyMeansLoopback(fa)
		opts.To = &fa
	}
	if err := s.sendControl(m.Control, &opts); err != nil {
		return 0, err
	}
	nonblock := m.Flags&unix.MSG_DONTWAIT != 0 || t == nil
	timeo := s.sndTimeout(nonblock)
	r := &reader{src: src}
	var payload tcpip.Payloader = r
	if p, err := s.egressPayload(r, opts.To); err != nil {
		return 0, err
	} else if p != nil {
		payload = p
	}
	total := src.Len()
	done := 0
	for {
		n, terr := s.ep.Write(payload, opts)
		done += int(n)
		if r.err != nil && done == 0 {
			return 0, r.err
		}
		if terr == nil && (s.typ != unix.SOCK_STREAM || done >= total) {
			return done, nil
		}
		if terr != nil {
			if _, block := terr.(*tcpip.ErrWouldBlock); !block {
				if done > 0 && s.typ == unix.SOCK_STREAM {
					return done, nil
				}
				err := netstack.Error(terr)
				if err == unix.EPIPE && s.typ == unix.SOCK_STREAM && t != nil && m.Flags&unix.MSG_NOSIGNAL == 0 {
					t.Signal(int(unix.SIGPIPE))
				}
				return 0, err
			}
		}
		if timeo == 0 {
			if done > 0 {
				return done, nil
			}
			return 0, unix.EAGAIN
		}
		if err := s.waitFor(t, waiter.WritableEvents, timeo); err == unix.ETIMEDOUT {
			timeo = 0
		} else if err != nil {
			if done > 0 {
				return done, nil
			}
			return 0, err
		}
	}
}

// fastOpen is a sendto(2) with MSG_FASTOPEN on a TCP socket: it connects
// to the address given, as connect(2) would, and the data then goes as
// on any connection. Linux's tcp_sendmsg_fastopen puts the data in the
// SYN when it has a cookie for the server; netstack has no TCP Fast
// Open, so the data follows the handshake, which a program cannot tell
// from a first connection without a cookie. AF_UNSPEC is EOPNOTSUPP, a
// connected socket EISCONN, no address EINVAL, a non-blocking socket's
// connection under way EINPROGRESS, as on Linux.
func (s *sock) fastOpen(t *kernel.Task, m *socket.SendMessage) error {
	if len(m.To) >= 2 && m.To[0] == unix.AF_UNSPEC && m.To[1] == 0 {
		return unix.EOPNOTSUPP
	}
	if _, terr := s.ep.GetRemoteAddress(); terr == nil {
		return unix.EISCONN
	}
	if t == nil {
		return unix.EOPNOTSUPP
	}
	return s.Connect(t, m.To, m.Flags&unix.MSG_DONTWAIT != 0)
}

// sendControl applies the control messages of sendmsg (IP_TTL, IP_TOS,
// IPV6_HOPLIMIT, IPV6_TCLASS); SCM_RIGHTS and other SOL_SOCKET ones are
// EINVAL on an IP socket.
func (s *sock) sendControl(cms []socket.Cmsg, opts *tcpip.WriteOptions) error {
	for _, c := range cms {
		v, _ := socket.Int32(c.Data)
		switch {
		case c.Level == unix.SOL_SOCKET:
			return unix.EINVAL
		case c.Level == unix.SOL_IP && c.Type == unix.IP_TTL:
			if v < 1 || v > 255 {
				return unix.EINVAL
			}
			opts.ControlMessages.HasTTL, opts.ControlMessages.TTL = true, uint8(v)
		case c.Level == unix.SOL_IPV6 && c.Type == unix.IPV6_HOPLIMIT:
			if v < -1 || v > 255 {
				return unix.EINVAL
			}
			if v >= 0 {
				opts.ControlMessages.HasHopLimit, opts.ControlMessages.HopLimit = true, uint8(v)
			}
		}
	}
	return nil
}

// RecvMsg implements socket.Socket. With TCP_INQ a stream's receive
// ends with a TCP_CM_INQ control message, as tcp_recvmsg's tcp_inq_hint
// gives it: the bytes still queued, one more once the peer's FIN has
// come (the FIN takes a sequence number), and 1 when the end has been
// read, so that a reader knows to read once more.
func (s *sock) RecvMsg(t *kernel.Task, dst *vfs.IOSeq, m *socket.RecvMessage) (int, error) {
	n, err := s.recv(t, dst, m)
	if err == nil && s.typ == unix.SOCK_STREAM && s.inq.Load() {
		q, _ := s.ep.GetSockOptInt(tcpip.ReceiveQueueSizeOption)
		switch tcp.EndpointState(s.ep.State()) {
		case tcp.StateEstablished, tcp.StateFinWait1, tcp.StateFinWait2:
		case tcp.StateCloseWait, tcp.StateLastAck, tcp.StateClosing, tcp.StateTimeWait:
			q++
		default:
			q = max(q, 1)
		}
		m.Control.Cmsgs = append(m.Control.Cmsgs, socket.Cmsg{Level: unix.SOL_TCP, Type: unix.TCP_CM_INQ, Data: socket.PutInt32(int32(q))})
	}
	return n, err
}

func (s *sock) recv(t *kernel.Task, dst *vfs.IOSeq, m *socket.RecvMessage) (int, error) {
	if m.Flags&unix.MSG_ERRQUEUE != 0 {
		return 0, unix.EAGAIN
	}
	if m.Flags&unix.MSG_OOB != 0 {
		return 0, unix.EINVAL
	}
	nonblock := m.Flags&unix.MSG_DONTWAIT != 0 || t == nil
	timeo := s.rcvTimeout(nonblock)
	peek := m.Flags&unix.MSG_PEEK != 0
	stream := s.typ == unix.SOCK_STREAM
	size := dst.Len()
	want := 1
	if stream && m.Flags&unix.MSG_WAITALL != 0 && !peek {
		want = size
	}
	// A stream's receive of no bytes waits, as Linux's tcp_recvmsg does,
	// for data or the end, and takes none: netstack is asked to peek a
	// byte.
	zero := stream && size == 0
	if zero {
		peek = true
	}
	// A datagram's receive into no room takes the datagram, truncated to
	// nothing, as Linux's does (MSG_TRUNC says so); netstack refuses to
	// write a datagram into a writer with no room (ErrBadBuffer, EFAULT),
	// so it is read into nothing and counted as no bytes.
	nowhere := !stream && size == 0
	copied := 0
	for {
		limit := int64(size - copied)
		if zero {
			limit = 1
		}
		var w io.Writer = &writer{dst: dst, off: copied}
		if stream && m.Flags&unix.MSG_TRUNC != 0 || zero || nowhere {
			w = discard{}
		}
		var dns *capture
		if !stream && s.st.Egress() != nil && s.proto == unix.IPPROTO_UDP {
			dns = &capture{w: w}
			w = dns
		}
		if !nowhere {
			w = &tcpip.LimitedWriter{W: w, N: limit}
		}
		res, terr := s.ep.Read(w, tcpip.ReadOptions{Peek: peek, NeedRemoteAddr: !stream})
		if nowhere {
			res.Count = 0
		}
		if terr == nil && zero {
			return 0, nil
		}
		if terr == nil {
			if res.Count == 0 && size > copied && stream {
				// The peer shut down its sending side: the end.
				return copied, nil
			}
			copied += res.Count
			if !stream {
				s.learn(res.RemoteAddr, dns)
				m.From = s.formatAddr(res.RemoteAddr)
				s.recvControl(res.ControlMessages, m)
				if res.Total > res.Count {
					m.OutFlags |= unix.MSG_TRUNC
				}
				if m.Flags&unix.MSG_TRUNC != 0 {
					return res.Total, nil
				}
				return copied, nil
			}
			if copied >= want || copied == size {
				return copied, nil
			}
			continue
		}
		switch terr.(type) {
		case *tcpip.ErrClosedForReceive:
			return copied, nil
		case *tcpip.ErrWouldBlock:
		default:
			if copied > 0 {
				return copied, nil
			}
			if _, notConn := terr.(*tcpip.ErrNotConnected); notConn && stream {
				return 0, unix.ENOTCONN
			}
			return 0, netstack.Error(terr)
		}
		if timeo == 0 {
			if copied > 0 {
				return copied, nil
			}
			return 0, unix.EAGAIN
		}
		if err := s.waitFor(t, waiter.ReadableEvents, timeo); err == unix.ETIMEDOUT {
			timeo = 0
		} else if err != nil {
			if copied > 0 {
				return copied, nil
			}
			return 0, err
		}
	}
}

// recvControl adds the control messages the socket asked for (IP_RECVTOS,
// IP_RECVTTL, IPV6_RECVTCLASS, IPV6_RECVHOPLIMIT, IP_PKTINFO).
func (s *sock) recvControl(cm tcpip.ReceivableControlMessages, m *socket.RecvMessage) {
	add := func(level, typ int, data []byte) {
		m.Control.Cmsgs = append(m.Control.Cmsgs, socket.Cmsg{Level: level, Type: typ, Data: data})
	}
	if cm.HasTOS {
		add(unix.SOL_IP, unix.IP_TOS, []byte{cm.TOS})
	}
	if cm.HasTTL {
		add(unix.SOL_IP, unix.IP_TTL, socket.PutInt32(int32(cm.TTL)))
	}
	if cm.HasIPPacketInfo {
		b := binary.LittleEndian.AppendUint32(nil, uint32(cm.PacketInfo.NIC))
		a := cm.PacketInfo.LocalAddr.As4()
		b = append(b, a[:]...)
		d := cm.PacketInfo.DestinationAddr.As4()
		add(unix.SOL_IP, unix.IP_PKTINFO, append(b, d[:]...))
	}
	if cm.HasTClass {
		add(unix.SOL_IPV6, unix.IPV6_TCLASS, socket.PutInt32(int32(cm.TClass)))
	}
	if cm.HasHopLimit {
		add(unix.SOL_IPV6, unix.IPV6_HOPLIMIT, socket.PutInt32(int32(cm.HopLimit)))
	}
	if cm.HasIPv6PacketInfo {
		a := cm.IPv6PacketInfo.Addr.As16()
		add(unix.SOL_IPV6, unix.IPV6_PKTINFO, binary.LittleEndian.AppendUint32(a[:], uint32(cm.IPv6PacketInfo.NIC)))
	}
}

// Ioctl implements vfs.FileImpl: FIONREAD (SIOCINQ) and SIOCOUTQ, and the
// interface requests (SIOCGIF*).
func (s *sock) Ioctl(cmd uint32, arg uintptr, io vfs.IoctlIO) (uintptr, error) {
	switch cmd {
	case linuxabi.FIONREAD, unix.SIOCOUTQ:
		if s.typ == unix.SOCK_STREAM && tcpState(s.ep) == stListen {
			return 0, unix.EINVAL
		}
		opt := tcpip.ReceiveQueueSizeOption
		if cmd == unix.SIOCOUTQ {
			opt = tcpip.SendQueueSizeOption
		}
		v, terr := s.ep.GetSockOptInt(opt)
		if terr != nil {
			return 0, netstack.Error(terr)
		}
		_, err := io.CopyOut(arg, socket.PutInt32(int32(v)))
		return 0, err
	}
	if handled, err := netstack.InterfaceIoctl(s.st, cmd, arg, io); handled {
		return 0, err
	}
	return 0, unix.ENOTTY
}
