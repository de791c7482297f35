package unixsock

import (
	"fmt"
	"sort"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/sentry/kernel"
)

// Socket states /proc/net/unix reports (socket_state).
const (
	ssUnconnected   = 1
	ssConnecting    = 2
	ssConnected     = 3
	ssDisconnecting = 4
	soAcceptCon     = 1 << 16 // __SO_ACCEPTCON
)

// ProcNetUnix is /proc/net/unix of k's sandbox, as Linux's unix_seq_show
// prints it: a made-up kernel address per socket (the hashed %pK of an
// unprivileged reader), its references, flags, type, state, inode and
// name ('@' for an abstract name's NULs).
func ProcNetUnix(k *kernel.Kernel) string {
	ns := nsOf(k)
	ns.mu.Lock()
	eps := make([]*endpoint, 0, len(ns.all))
	for e := range ns.all {
		eps = append(eps, e)
	}
	sort.Slice(eps, func(i, j int) bool { return eps[i].Ino() < eps[j].Ino() })
	var b strings.Builder
	b.WriteString("Num       RefCount Protocol Flags    Type St Inode Path\n")
	for _, e := range eps {
		flags := 0
		if e.state == stListen {
			flags = soAcceptCon
		}
		st := ssUnconnected
		switch {
		case e.file != nil && e.state == stEstablished:
			st = ssConnected
		case e.file == nil && e.state == stEstablished:
			st = ssConnecting
		case e.file == nil:
			st = ssDisconnecting
		}
		refs := 2
		if e.peer != nil {
			refs = 3
		}
		fmt.Fprintf(&b, "%016x: %08X %08X %08X %04X %02X %5d", pseudoAddr(e.Ino()), refs, 0, flags, e.typ, st, e.Ino())
		if e.addr != nil {
			b.WriteByte(' ')
			name := e.addr[sunPath:]
			if name[0] != 0 {
				name = name[:len(name)-1] // the NUL the kept name ends with
			}
			for _, c := range name {
				if c == 0 {
					c = '@'
				}
				b.WriteByte(c)
			}
		}
		b.WriteByte('\n')
	}
	ns.mu.Unlock()
	return b.String()
}

// pseudoAddr stands for a socket's kernel address, which no sandbox shows.
func pseudoAddr(ino uint64) uint64 { return ino * 0x9e3779b97f4a7c15 >> 32 }

// Diag is what NETLINK_SOCK_DIAG tells of one unix socket (Linux's
// net/unix/diag.c): its sk_state (TCP_* numbers), the name it is bound
// to (sun_path as bound, nil unbound), its peer's inode (0 for none, or
// a connection not yet accepted, which has no inode), the queue lengths
// of UNIX_DIAG_RQLEN (a listener's pending connections and backlog,
// else SIOCINQ's and SIOCOUTQ's counts), its shutdown bits and owner.
type Diag struct {
	Ino            uint64
	Type           int
	State          uint8
	Name           []byte
	Peer           uint32
	RQueue, WQueue uint32
	Shutdown       uint8
	UID            uint32
}

// Diags returns the unix sockets of k's sandbox that have an inode, in
// inode order.
func Diags(k *kernel.Kernel) []Diag {
	ns := nsOf(k)
	ns.mu.Lock()
	defer ns.mu.Unlock()
	out := make([]Diag, 0, len(ns.all))
	for e := range ns.all {
		if e.file == nil {
			continue // not accepted yet: no socket inode
		}
		uid, _ := e.IDs()
		d := Diag{Ino: e.Ino(), Type: e.typ, State: uint8(e.state), Shutdown: uint8(e.shut), UID: uid}
		if e.addr != nil {
			d.Name = append([]byte(nil), e.addr[sunPath:]...)
		}
		if p := e.peer; p != nil && p.file != nil {
			d.Peer = uint32(p.Ino())
		}
		if e.state == stListen {
			d.RQueue, d.WQueue = uint32(len(e.recvq)), uint32(e.backlog)
		} else {
			n := 0
			for _, m := range e.recvq {
				n += len(m.data) - m.off
				if e.typ == unix.SOCK_DGRAM {
					break
				}
			}
			d.RQueue, d.WQueue = uint32(n), uint32(e.wmem)
		}
		out = append(out, d)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Ino < out[j].Ino })
	return out
}
