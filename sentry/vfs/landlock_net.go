package vfs

import "golang.org/x/sys/unix"

// Landlock's network rights (ABI 4): binding a TCP socket to a port and
// connecting one to a port, each allowed only if every layer that handles
// it has a rule for the port. The socket calls check them; the rules are
// the domain's, so they live beside its file-system ones.

// LandlockNetRights are the network rights moat knows.
const LandlockNetRights = unix.LANDLOCK_ACCESS_NET_BIND_TCP | unix.LANDLOCK_ACCESS_NET_CONNECT_TCP

// CheckPort reports whether every layer that handles want (BIND_TCP or
// CONNECT_TCP) allows it on port: nil, or EACCES.
func (dom *LandlockDomain) CheckPort(port uint16, want uint64) error {
	if dom == nil {
		return nil
	}
	var m layerRights
	for i, l := range dom.layers {
		m[i] = want & l.Net
	}
	for _, g := range dom.ports[port] {
		m[g.layer] &^= g.access
	}
	if m.any() {
		return unix.EACCES
	}
	return nil
}
