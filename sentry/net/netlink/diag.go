package netlink

import (
	"encoding/binary"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/sentry/kernel"
	"github.com/moat-sandbox/moat/sentry/net/unixsock"
)

// NETLINK_SOCK_DIAG's AF_UNIX part, as Linux's net/unix/diag.c answers
// SOCK_DIAG_BY_FAMILY: one socket by inode (and cookie), or a dump of
// those in the states asked for. Other families have no handler here,
// as on a kernel without inet_diag: ENOENT (ss then reads /proc/net).

// The unix_diag_req and unix_diag_msg layouts and the attributes.
const (
	sockDiagByFamily = 20 // SOCK_DIAG_BY_FAMILY
	tcpDiagGetSock   = 18 // TCPDIAG_GETSOCK
	dccpDiagGetSock  = 19 // DCCPDIAG_GETSOCK
	sizeofUnixReq    = 24 // struct unix_diag_req
	sizeofUnixMsg    = 16 // struct unix_diag_msg

	udiagShowName  = 0x01
	udiagShowPeer  = 0x04
	udiagShowRQLen = 0x10
	udiagShowUID   = 0x40

	unixDiagName     = 0
	unixDiagPeer     = 2
	unixDiagRQLen    = 4
	unixDiagShutdown = 6
	unixDiagUID      = 7
)

// diag answers one request of a NETLINK_SOCK_DIAG socket.
func diag(t *kernel.Task, req []byte, port uint32, capAck bool) [][]byte {
	typ := binary.LittleEndian.Uint16(req[4:])
	flags := binary.LittleEndian.Uint16(req[6:])
	seq := binary.LittleEndian.Uint32(req[8:])
	body := req[unix.SizeofNlMsghdr:]
	switch {
	case typ == tcpDiagGetSock || typ == dccpDiagGetSock:
		// The old inet_diag requests, which no handler here takes.
		return [][]byte{errMsg(req, unix.EOPNOTSUPP, port, capAck)}
	case typ != sockDiagByFamily || len(body) < 2:
		return [][]byte{errMsg(req, unix.EINVAL, port, capAck)}
	}
	if body[0] != unix.AF_UNIX || t == nil {
		return [][]byte{errMsg(req, unix.ENOENT, port, capAck)}
	}
	if len(body) < sizeofUnixReq {
		return [][]byte{errMsg(req, unix.EINVAL, port, capAck)}
	}
	states := binary.LittleEndian.Uint32(body[4:])
	ino := binary.LittleEndian.Uint32(body[8:])
	show := binary.LittleEndian.Uint32(body[12:])
	cookie := binary.LittleEndian.Uint64(body[16:])
	socks := unixsock.Diags(t.Kernel())
	for i := range socks {
		// As the asking task's user namespace shows the owner (Linux:
		// the netlink socket's), the overflow id if unmapped.
		socks[i].UID = t.Creds().UIDOf(socks[i].UID)
	}
	if flags&unix.NLM_F_DUMP == unix.NLM_F_DUMP {
		var parts []byte
		for _, d := range socks {
			if states&(1<<d.State) != 0 {
				parts = append(parts, unixDiagMsg(d, show, unix.NLM_F_MULTI, seq, port)...)
			}
		}
		return [][]byte{append(parts, done(seq, port)...)}
	}
	for _, d := range socks {
		if uint32(d.Ino) != ino {
			continue
		}
		// sock_diag_check_cookie: all ones is no cookie; SO_COOKIE is
		// the inode number here.
		if cookie != ^uint64(0) && cookie != d.Ino {
			return [][]byte{errMsg(req, unix.ESTALE, port, capAck)}
		}
		return [][]byte{unixDiagMsg(d, show, 0, seq, port)}
	}
	return [][]byte{errMsg(req, unix.ENOENT, port, capAck)}
}

// unixDiagMsg is sk_diag_fill's message: the attributes in Linux's
// order, UNIX_DIAG_SHUTDOWN always. The uid is the socket's owner, as
// the asker's user namespace shows it.
func unixDiagMsg(d unixsock.Diag, show uint32, flags uint16, seq, port uint32) []byte {
	fixed := make([]byte, sizeofUnixMsg)
	fixed[0], fixed[1], fixed[2] = unix.AF_UNIX, uint8(d.Type), d.State
	binary.LittleEndian.PutUint32(fixed[4:], uint32(d.Ino))
	binary.LittleEndian.PutUint64(fixed[8:], d.Ino)
	m := newMsg(sockDiagByFamily, flags, seq, port, fixed)
	if show&udiagShowName != 0 && d.Name != nil {
		m.attr(unixDiagName, d.Name)
	}
	if show&udiagShowPeer != 0 && (d.Peer != 0 || d.Type != unix.SOCK_DGRAM && d.State == 1) {
		m.u32(unixDiagPeer, d.Peer)
	}
	if show&udiagShowRQLen != 0 {
		m.attr(unixDiagRQLen, binary.LittleEndian.AppendUint32(binary.LittleEndian.AppendUint32(nil, d.RQueue), d.WQueue))
	}
	m.attr(unixDiagShutdown, []byte{d.Shutdown})
	if show&udiagShowUID != 0 {
		m.u32(unixDiagUID, d.UID)
	}
	return m.bytes()
}
