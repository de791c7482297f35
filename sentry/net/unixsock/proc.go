package unixsock

import (
	"fmt"
	"sort"
	"strings"

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
