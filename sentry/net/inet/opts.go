package inet

import (
	"encoding/binary"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/transport/tcp"

	"github.com/moat-sandbox/moat/sentry/kernel"
	"github.com/moat-sandbox/moat/sentry/net/netstack"
	"github.com/moat-sandbox/moat/sentry/net/socket"
)

// Linux's TCP states (include/net/tcp_states.h); netstack numbers its own
// first eleven the same.
const (
	stEstablished = 1
	stSynSent     = 2
	stClose       = 7
	stListen      = 10
)

// tcpState is the endpoint's state as Linux numbers it.
func tcpState(ep tcpip.Endpoint) uint8 {
	st := tcp.EndpointState(ep.State())
	switch {
	case st >= tcp.StateEstablished && st <= tcp.StateClosing:
		return uint8(st)
	case st == tcp.StateConnecting:
		return stSynSent
	}
	return stClose
}

// sizeofTCPInfo is struct tcp_info as Linux 6.1 has it.
const sizeofTCPInfo = 232

// GetSockOpt implements socket.Socket.
func (s *sock) GetSockOpt(t *kernel.Task, level, name, size int) ([]byte, error) {
	so := s.ep.SocketOptions()
	switch level {
	case unix.SOL_SOCKET:
		switch name {
		case unix.SO_TYPE:
			return socket.PutInt32(int32(s.typ)), nil
		case unix.SO_DOMAIN:
			return socket.PutInt32(int32(s.family)), nil
		case unix.SO_PROTOCOL:
			return socket.PutInt32(int32(s.proto)), nil
		case unix.SO_ERROR:
			return socket.PutInt32(errnoOf(netstack.Error(s.ep.LastError()))), nil
		case unix.SO_ACCEPTCONN:
			return socket.PutBool(s.typ == unix.SOCK_STREAM && tcpState(s.ep) == stListen), nil
		case unix.SO_REUSEADDR:
			return socket.PutBool(so.GetReuseAddress()), nil
		case unix.SO_REUSEPORT:
			return socket.PutBool(so.GetReusePort()), nil
		case unix.SO_KEEPALIVE:
			return socket.PutBool(so.GetKeepAlive()), nil
		case unix.SO_BROADCAST:
			return socket.PutBool(so.GetBroadcast()), nil
		case unix.SO_NO_CHECK:
			return socket.PutBool(so.GetNoChecksum()), nil
		case unix.SO_LINGER:
			l := so.GetLinger()
			b := binary.LittleEndian.AppendUint32(nil, boolInt(l.Enabled))
			return binary.LittleEndian.AppendUint32(b, uint32(l.Timeout/time.Second)), nil
		case unix.SO_SNDBUF:
			s.sizeSendBuffer()
			return socket.PutInt32(int32(so.GetSendBufferSize())), nil
		case unix.SO_RCVBUF:
			return socket.PutInt32(int32(so.GetReceiveBufferSize())), nil
		case unix.SO_RCVLOWAT:
			return socket.PutInt32(int32(max(so.GetRcvlowat(), 1))), nil
		case unix.SO_PEERCRED:
			b := binary.LittleEndian.AppendUint32(nil, 0)
			b = binary.LittleEndian.AppendUint32(b, ^uint32(0))
			return binary.LittleEndian.AppendUint32(b, ^uint32(0)), nil
		case unix.SO_BINDTODEVICE:
			if nic := so.GetBindToDevice(); nic != 0 {
				if info, ok := s.st.S.NICInfo()[tcpip.NICID(nic)]; ok {
					return append([]byte(info.Name), 0), nil
				}
			}
			return nil, nil
		case unix.SO_COOKIE:
			return binary.LittleEndian.AppendUint64(nil, s.Ino()), nil
		case unix.SO_PASSCRED:
			return socket.PutBool(so.GetPassCred()), nil
		}
		s.mu.Lock()
		v, ok := s.opts.Get(name)
		s.mu.Unlock()
		if ok {
			return v, nil
		}
		return nil, unix.ENOPROTOOPT
	case unix.SOL_TCP:
		if s.typ != unix.SOCK_STREAM || s.proto != unix.IPPROTO_TCP {
			return nil, unix.EOPNOTSUPP
		}
		return s.getTCP(name, size)
	case unix.SOL_IP:
		return s.getIP(name, size)
	case unix.SOL_IPV6:
		if s.family != unix.AF_INET6 {
			return nil, unix.ENOPROTOOPT
		}
		return s.getIPv6(name)
	}
	return nil, unix.ENOPROTOOPT
}

func boolInt(b bool) uint32 {
	if b {
		return 1
	}
	return 0
}

func errnoOf(err error) int32 {
	if e, ok := err.(unix.Errno); ok {
		return int32(e)
	}
	return 0
}

func (s *sock) intOpt(o tcpip.SockOptInt) ([]byte, error) {
	v, terr := s.ep.GetSockOptInt(o)
	if terr != nil {
		return nil, netstack.Error(terr)
	}
	return socket.PutInt32(int32(v)), nil
}

func (s *sock) getTCP(name, size int) ([]byte, error) {
	so := s.ep.SocketOptions()
	switch name {
	case unix.TCP_NODELAY:
		return socket.PutBool(!so.GetDelayOption()), nil
	case unix.TCP_CORK:
		return socket.PutBool(so.GetCorkOption()), nil
	case unix.TCP_QUICKACK:
		return socket.PutBool(so.GetQuickAck()), nil
	case unix.TCP_MAXSEG:
		return s.intOpt(tcpip.MaxSegOption)
	case unix.TCP_KEEPCNT:
		return s.intOpt(tcpip.KeepaliveCountOption)
	case unix.TCP_SYNCNT:
		return s.intOpt(tcpip.TCPSynCountOption)
	case unix.TCP_WINDOW_CLAMP:
		return s.intOpt(tcpip.TCPWindowClampOption)
	case unix.TCP_KEEPIDLE:
		var v tcpip.KeepaliveIdleOption
		s.ep.GetSockOpt(&v)
		return socket.PutInt32(int32(time.Duration(v) / time.Second)), nil
	case unix.TCP_KEEPINTVL:
		var v tcpip.KeepaliveIntervalOption
		s.ep.GetSockOpt(&v)
		return socket.PutInt32(int32(time.Duration(v) / time.Second)), nil
	case unix.TCP_USER_TIMEOUT:
		var v tcpip.TCPUserTimeoutOption
		s.ep.GetSockOpt(&v)
		return socket.PutInt32(int32(time.Duration(v) / time.Millisecond)), nil
	case unix.TCP_LINGER2:
		var v tcpip.TCPLingerTimeoutOption
		s.ep.GetSockOpt(&v)
		return socket.PutInt32(int32(time.Duration(v) / time.Second)), nil
	case unix.TCP_DEFER_ACCEPT:
		var v tcpip.TCPDeferAcceptOption
		s.ep.GetSockOpt(&v)
		return socket.PutInt32(int32(time.Duration(v) / time.Second)), nil
	case unix.TCP_CONGESTION:
		var v tcpip.CongestionControlOption
		s.ep.GetSockOpt(&v)
		b := make([]byte, 16) // TCP_CA_NAME_MAX
		copy(b, v)
		return b[:min(len(b), max(size, 0))], nil
	case unix.TCP_INFO:
		return s.tcpInfo(), nil
	case unix.TCP_INQ:
		return socket.PutBool(s.inq.Load()), nil
	case unix.TCP_FASTOPEN, unix.TCP_FASTOPEN_CONNECT, unix.TCP_THIN_LINEAR_TIMEOUTS, unix.TCP_NOTSENT_LOWAT:
		return socket.PutInt32(0), nil
	}
	return nil, unix.ENOPROTOOPT
}

// tcpInfo is TCP_INFO: what netstack knows of the connection in Linux's
// struct tcp_info (6.1's length); counters netstack does not keep are 0.
func (s *sock) tcpInfo() []byte {
	var v tcpip.TCPInfoOption
	s.ep.GetSockOpt(&v)
	var ti unix.TCPInfo
	ti.State = tcpState(s.ep)
	ti.Ca_state = uint8(v.CcState)
	ti.Rto = uint32(v.RTO / time.Microsecond)
	ti.Rtt = uint32(v.RTT / time.Microsecond)
	ti.Rttvar = uint32(v.RTTVar / time.Microsecond)
	ti.Snd_cwnd = v.SndCwnd
	ti.Snd_ssthresh = v.SndSsthresh
	if mss, err := s.ep.GetSockOptInt(tcpip.MaxSegOption); err == nil {
		ti.Snd_mss, ti.Rcv_mss, ti.Advmss = uint32(mss), uint32(mss), uint32(mss)
	}
	ti.Options = 0x2 | 0x4 // TCPI_OPT_SACK, TCPI_OPT_WSCALE
	ti.Pmtu = 65536
	st := s.ep.Stats()
	if ts, ok := st.(*tcp.Stats); ok {
		ti.Segs_out = uint32(ts.SegmentsSent.Value())
		ti.Segs_in = uint32(ts.SegmentsReceived.Value())
		ti.Total_retrans = uint32(ts.SendErrors.Retransmits.Value())
	}
	if v.ReorderSeen {
		ti.Reord_seen = 1
	}
	b := unsafe.Slice((*byte)(unsafe.Pointer(&ti)), unsafe.Sizeof(ti))
	return append([]byte(nil), b[:sizeofTCPInfo]...)
}

func (s *sock) getIP(name, size int) ([]byte, error) {
	so := s.ep.SocketOptions()
	var v []byte
	var err error
	switch name {
	case unix.IP_TOS:
		v, err = s.intOpt(tcpip.IPv4TOSOption)
	case unix.IP_TTL:
		v, err = s.intOpt(tcpip.IPv4TTLOption)
		if err == nil && int32(binary.LittleEndian.Uint32(v)) == 0 {
			v = socket.PutInt32(64)
		}
	case unix.IP_MULTICAST_TTL:
		v, err = s.intOpt(tcpip.MulticastTTLOption)
	case unix.IP_MULTICAST_LOOP:
		v = socket.PutBool(so.GetMulticastLoop())
	case unix.IP_RECVTOS:
		v = socket.PutBool(so.GetReceiveTOS())
	case unix.IP_RECVTTL:
		v = socket.PutBool(so.GetReceiveTTL())
	case unix.IP_PKTINFO:
		v = socket.PutBool(so.GetReceivePacketInfo())
	case unix.IP_RECVERR:
		v = socket.PutBool(so.GetIPv4RecvError())
	case unix.IP_HDRINCL:
		v = socket.PutBool(so.GetHeaderIncluded())
	case unix.IP_MTU_DISCOVER:
		v, err = s.intOpt(tcpip.MTUDiscoverOption)
	default:
		return nil, unix.ENOPROTOOPT
	}
	if err != nil {
		return nil, err
	}
	// do_ip_getsockopt answers a buffer shorter than an int with one
	// byte, for values that fit.
	if size < 4 && size > 0 {
		if n := int32(binary.LittleEndian.Uint32(v)); n >= 0 && n <= 255 {
			return v[:1], nil
		}
	}
	return v, nil
}

func (s *sock) getIPv6(name int) ([]byte, error) {
	so := s.ep.SocketOptions()
	switch name {
	case unix.IPV6_V6ONLY:
		return socket.PutBool(so.GetV6Only()), nil
	case unix.IPV6_TCLASS:
		return s.intOpt(tcpip.IPv6TrafficClassOption)
	case unix.IPV6_UNICAST_HOPS:
		v, err := s.intOpt(tcpip.IPv6HopLimitOption)
		if err == nil && int32(binary.LittleEndian.Uint32(v)) <= 0 {
			v = socket.PutInt32(64)
		}
		return v, err
	case unix.IPV6_RECVTCLASS:
		return socket.PutBool(so.GetReceiveTClass()), nil
	case unix.IPV6_RECVHOPLIMIT:
		return socket.PutBool(so.GetReceiveHopLimit()), nil
	case unix.IPV6_RECVPKTINFO:
		return socket.PutBool(so.GetIPv6ReceivePacketInfo()), nil
	case unix.IPV6_RECVERR:
		return socket.PutBool(so.GetIPv6RecvError()), nil
	case unix.IPV6_MULTICAST_LOOP:
		return socket.PutBool(so.GetMulticastLoop()), nil
	}
	return nil, unix.ENOPROTOOPT
}

// SetSockOpt implements socket.Socket.
func (s *sock) SetSockOpt(t *kernel.Task, level, name int, val []byte) error {
	so := s.ep.SocketOptions()
	flag := func(set func(bool)) error {
		v, err := socket.Bool(val)
		if err == nil {
			set(v)
		}
		return err
	}
	intv := func(set func(int32) tcpip.Error) error {
		v, err := ipInt(val)
		if err != nil {
			return err
		}
		return netstack.Error(set(v))
	}
	switch level {
	case unix.SOL_SOCKET:
		switch name {
		case unix.SO_REUSEADDR:
			return flag(so.SetReuseAddress)
		case unix.SO_REUSEPORT:
			return flag(so.SetReusePort)
		case unix.SO_KEEPALIVE:
			return flag(so.SetKeepAlive)
		case unix.SO_BROADCAST:
			return flag(so.SetBroadcast)
		case unix.SO_NO_CHECK:
			return flag(so.SetNoChecksum)
		case unix.SO_PASSCRED:
			return flag(so.SetPassCred)
		case unix.SO_LINGER:
			if len(val) < unix.SizeofLinger {
				return unix.EINVAL
			}
			on := binary.LittleEndian.Uint32(val) != 0
			secs := int32(binary.LittleEndian.Uint32(val[4:]))
			so.SetLinger(tcpip.LingerOption{Enabled: on, Timeout: time.Duration(max(secs, 0)) * time.Second})
			return nil
		case unix.SO_SNDBUF, unix.SO_RCVBUF, unix.SO_SNDBUFFORCE, unix.SO_RCVBUFFORCE:
			v, err := socket.Int32(val)
			if err != nil {
				return err
			}
			force := name == unix.SO_SNDBUFFORCE || name == unix.SO_RCVBUFFORCE
			if force && !t.Capable(unix.CAP_NET_ADMIN) {
				return unix.EPERM
			}
			if name == unix.SO_SNDBUF || name == unix.SO_SNDBUFFORCE {
				if !force && uint32(v) > socket.WmemMax {
					v = socket.WmemMax
				}
				so.SetSendBufferSize(int64(max(v, 0))*2, true)
				s.sndbufLocked.Store(true)
			} else {
				if !force && uint32(v) > socket.RmemMax {
					v = socket.RmemMax
				}
				so.SetReceiveBufferSize(int64(max(v, 0))*2, true)
			}
			return nil
		case unix.SO_RCVLOWAT:
			v, err := socket.Int32(val)
			if err != nil {
				return err
			}
			return netstack.Error(so.SetRcvlowat(int32(max(v, 0))))
		case unix.SO_BINDTODEVICE:
			name := string(val)
			if i := indexNUL(val); i >= 0 {
				name = string(val[:i])
			}
			if name == "" {
				return netstack.Error(so.SetBindToDevice(0))
			}
			for id, info := range s.st.S.NICInfo() {
				if info.Name == name {
					return netstack.Error(so.SetBindToDevice(int32(id)))
				}
			}
			return unix.ENODEV
		case unix.SO_TYPE, unix.SO_DOMAIN, unix.SO_PROTOCOL, unix.SO_ERROR, unix.SO_ACCEPTCONN, unix.SO_PEERCRED:
			return unix.ENOPROTOOPT
		}
		s.mu.Lock()
		ok, err := s.opts.Set(t, name, val)
		s.mu.Unlock()
		if !ok {
			return unix.ENOPROTOOPT
		}
		return err
	case unix.SOL_TCP:
		if s.typ != unix.SOCK_STREAM || s.proto != unix.IPPROTO_TCP {
			return unix.EOPNOTSUPP
		}
		return s.setTCP(name, val)
	case unix.SOL_IP:
		switch name {
		case unix.IP_TOS:
			return intv(func(v int32) tcpip.Error { return s.ep.SetSockOptInt(tcpip.IPv4TOSOption, int(v)) })
		case unix.IP_TTL:
			v, err := ipInt(val)
			if err != nil {
				return err
			}
			if v == -1 {
				v = 0
			}
			if v < 0 || v > 255 {
				return unix.EINVAL
			}
			return netstack.Error(s.ep.SetSockOptInt(tcpip.IPv4TTLOption, int(v)))
		case unix.IP_MULTICAST_TTL:
			return intv(func(v int32) tcpip.Error { return s.ep.SetSockOptInt(tcpip.MulticastTTLOption, int(v)) })
		case unix.IP_MTU_DISCOVER:
			return intv(func(v int32) tcpip.Error { return s.ep.SetSockOptInt(tcpip.MTUDiscoverOption, int(v)) })
		case unix.IP_MULTICAST_LOOP:
			return flag(so.SetMulticastLoop)
		case unix.IP_RECVTOS:
			return flag(so.SetReceiveTOS)
		case unix.IP_RECVTTL:
			return flag(so.SetReceiveTTL)
		case unix.IP_PKTINFO:
			return flag(so.SetReceivePacketInfo)
		case unix.IP_RECVERR:
			return flag(so.SetIPv4RecvError)
		case unix.IP_HDRINCL:
			if s.typ != unix.SOCK_RAW {
				return unix.ENOPROTOOPT
			}
			return flag(so.SetHeaderIncluded)
		case unix.IP_BIND_ADDRESS_NO_PORT, unix.IP_FREEBIND, unix.IP_TRANSPARENT:
			_, err := ipInt(val)
			return err
		}
		return unix.ENOPROTOOPT
	case unix.SOL_IPV6:
		if s.family != unix.AF_INET6 {
			return unix.ENOPROTOOPT
		}
		switch name {
		case unix.IPV6_V6ONLY:
			if s.typ == unix.SOCK_STREAM && tcpState(s.ep) != stClose {
				return unix.EINVAL
			}
			return flag(so.SetV6Only)
		case unix.IPV6_TCLASS:
			return intv(func(v int32) tcpip.Error {
				if v == -1 {
					v = 0
				}
				if v < 0 || v > 255 {
					return &tcpip.ErrInvalidOptionValue{}
				}
				return s.ep.SetSockOptInt(tcpip.IPv6TrafficClassOption, int(v))
			})
		case unix.IPV6_UNICAST_HOPS:
			return intv(func(v int32) tcpip.Error {
				if v < -1 || v > 255 {
					return &tcpip.ErrInvalidOptionValue{}
				}
				return s.ep.SetSockOptInt(tcpip.IPv6HopLimitOption, int(v))
			})
		case unix.IPV6_RECVTCLASS:
			return flag(so.SetReceiveTClass)
		case unix.IPV6_RECVHOPLIMIT:
			return flag(so.SetReceiveHopLimit)
		case unix.IPV6_RECVPKTINFO:
			return flag(so.SetIPv6ReceivePacketInfo)
		case unix.IPV6_RECVERR:
			return flag(so.SetIPv6RecvError)
		case unix.IPV6_MULTICAST_LOOP:
			return flag(so.SetMulticastLoop)
		}
		return unix.ENOPROTOOPT
	}
	return unix.ENOPROTOOPT
}

// ipInt reads an IP option's value: an int, or (do_ip_setsockopt) a
// single byte.
func ipInt(val []byte) (int32, error) {
	switch {
	case len(val) >= 4:
		return int32(binary.LittleEndian.Uint32(val)), nil
	case len(val) >= 1:
		return int32(val[0]), nil
	}
	return 0, unix.EINVAL
}

func indexNUL(b []byte) int {
	for i, c := range b {
		if c == 0 {
			return i
		}
	}
	return -1
}

func (s *sock) setTCP(name int, val []byte) error {
	so := s.ep.SocketOptions()
	if name == unix.TCP_CONGESTION {
		n := string(val)
		if i := indexNUL(val); i >= 0 {
			n = n[:i]
		}
		opt := tcpip.CongestionControlOption(n)
		if terr := s.ep.SetSockOpt(&opt); terr != nil {
			return unix.ENOENT
		}
		return nil
	}
	v, err := socket.Int32(val)
	if err != nil {
		return err
	}
	secs := func(o interface{ tcpip.SettableSocketOption }) error { return netstack.Error(s.ep.SetSockOpt(o)) }
	switch name {
	case unix.TCP_NODELAY:
		so.SetDelayOption(v == 0)
	case unix.TCP_CORK:
		so.SetCorkOption(v != 0)
	case unix.TCP_QUICKACK:
		so.SetQuickAck(v != 0)
	case unix.TCP_MAXSEG:
		return netstack.Error(s.ep.SetSockOptInt(tcpip.MaxSegOption, int(v)))
	case unix.TCP_KEEPCNT:
		if v < 1 || v > 127 {
			return unix.EINVAL
		}
		return netstack.Error(s.ep.SetSockOptInt(tcpip.KeepaliveCountOption, int(v)))
	case unix.TCP_SYNCNT:
		if v < 1 || v > 127 {
			return unix.EINVAL
		}
		return netstack.Error(s.ep.SetSockOptInt(tcpip.TCPSynCountOption, int(v)))
	case unix.TCP_WINDOW_CLAMP:
		return netstack.Error(s.ep.SetSockOptInt(tcpip.TCPWindowClampOption, int(v)))
	case unix.TCP_KEEPIDLE:
		if v < 1 || v > 32767 {
			return unix.EINVAL
		}
		o := tcpip.KeepaliveIdleOption(time.Duration(v) * time.Second)
		return secs(&o)
	case unix.TCP_KEEPINTVL:
		if v < 1 || v > 32767 {
			return unix.EINVAL
		}
		o := tcpip.KeepaliveIntervalOption(time.Duration(v) * time.Second)
		return secs(&o)
	case unix.TCP_USER_TIMEOUT:
		if v < 0 {
			return unix.EINVAL
		}
		o := tcpip.TCPUserTimeoutOption(time.Duration(v) * time.Millisecond)
		return secs(&o)
	case unix.TCP_LINGER2:
		o := tcpip.TCPLingerTimeoutOption(time.Duration(v) * time.Second)
		return secs(&o)
	case unix.TCP_DEFER_ACCEPT:
		o := tcpip.TCPDeferAcceptOption(time.Duration(max(v, 0)) * time.Second)
		return secs(&o)
	case unix.TCP_FASTOPEN, unix.TCP_FASTOPEN_CONNECT, unix.TCP_THIN_LINEAR_TIMEOUTS, unix.TCP_NOTSENT_LOWAT:
		return nil
	case unix.TCP_INQ:
		if v < 0 || v > 1 {
			return unix.EINVAL
		}
		s.inq.Store(v == 1)
	default:
		return unix.ENOPROTOOPT
	}
	return nil
}
