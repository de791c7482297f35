package netstack

import (
	"encoding/binary"
	"sort"

	"golang.org/x/sys/unix"
	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/network/ipv4"
)

// IoctlIO is the guest memory an ioctl reads and writes.
type IoctlIO interface {
	CopyIn(addr uintptr, dst []byte) (int, error)
	CopyOut(addr uintptr, src []byte) (int, error)
}

// sizeofIfreq is struct ifreq: a name of IFNAMSIZ bytes and a union.
const sizeofIfreq = 40

// Interface is one interface as the SIOCGIF requests, netlink and /proc
// show it.
type Interface struct {
	Index  int32
	Name   string
	Flags  uint32 // IFF_*
	MTU    uint32
	HWAddr []byte
	Type   uint16 // ARPHRD_*
	Addrs  []tcpip.ProtocolAddress
	Stats  tcpip.NICStats
}

// Interfaces returns the stack's interfaces by index.
func (st *Stack) Interfaces() []Interface {
	var out []Interface
	for id, info := range st.S.NICInfo() {
		ifc := Interface{Index: int32(id), Name: info.Name, MTU: info.MTU, HWAddr: []byte(info.LinkAddress),
			Type: uint16(info.ARPHardwareType), Addrs: info.ProtocolAddresses, Stats: info.Stats}
		if info.Flags.Up {
			ifc.Flags |= unix.IFF_UP
		}
		if info.Flags.Running {
			ifc.Flags |= unix.IFF_RUNNING | unix.IFF_LOWER_UP
		}
		if info.Flags.Promiscuous {
			ifc.Flags |= unix.IFF_PROMISC
		}
		if info.Flags.Loopback {
			ifc.Flags |= unix.IFF_LOOPBACK
			ifc.Type = unix.ARPHRD_LOOPBACK
			if len(ifc.HWAddr) == 0 {
				ifc.HWAddr = make([]byte, 6)
			}
		} else {
			ifc.Flags |= unix.IFF_BROADCAST | unix.IFF_MULTICAST
		}
		out = append(out, ifc)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Index < out[j].Index })
	return out
}

// InterfaceIoctl answers the SIOCGIF requests any socket takes
// (dev_ioctl): handled is false for another request.
func InterfaceIoctl(st *Stack, cmd uint32, arg uintptr, io IoctlIO) (handled bool, err error) {
	switch cmd {
	case unix.SIOCGIFCONF:
		return true, ifconf(st, arg, io)
	case unix.SIOCGIFINDEX, unix.SIOCGIFNAME, unix.SIOCGIFFLAGS, unix.SIOCGIFMTU, unix.SIOCGIFADDR,
		unix.SIOCGIFNETMASK, unix.SIOCGIFBRDADDR, unix.SIOCGIFHWADDR, unix.SIOCGIFTXQLEN:
	default:
		return false, nil
	}
	var req [sizeofIfreq]byte
	if _, err := io.CopyIn(arg, req[:]); err != nil {
		return true, unix.EFAULT
	}
	var ifc *Interface
	ifcs := st.Interfaces()
	if cmd == unix.SIOCGIFNAME {
		idx := int32(binary.LittleEndian.Uint32(req[16:]))
		for i := range ifcs {
			if ifcs[i].Index == idx {
				ifc = &ifcs[i]
			}
		}
	} else {
		name := string(req[:16])
		if i := indexByte(req[:16], 0); i >= 0 {
			name = string(req[:i])
		}
		for i := range ifcs {
			if ifcs[i].Name == name {
				ifc = &ifcs[i]
			}
		}
	}
	if ifc == nil {
		return true, unix.ENODEV
	}
	u := req[16:]
	for i := range u {
		u[i] = 0
	}
	switch cmd {
	case unix.SIOCGIFNAME:
		// The name ends with a NUL, whatever the caller left in the
		// field (glibc's if_indextoname leaves it uninitialised).
		clear(req[:16])
		copy(req[:15], ifc.Name)
	case unix.SIOCGIFINDEX:
		binary.LittleEndian.PutUint32(u, uint32(ifc.Index))
	case unix.SIOCGIFFLAGS:
		binary.LittleEndian.PutUint16(u, uint16(ifc.Flags))
	case unix.SIOCGIFMTU:
		binary.LittleEndian.PutUint32(u, ifc.MTU)
	case unix.SIOCGIFTXQLEN:
		binary.LittleEndian.PutUint32(u, 1000)
	case unix.SIOCGIFHWADDR:
		binary.LittleEndian.PutUint16(u, ifc.Type)
		copy(u[2:], ifc.HWAddr)
	case unix.SIOCGIFADDR, unix.SIOCGIFNETMASK, unix.SIOCGIFBRDADDR:
		pa, ok := firstV4(ifc.Addrs)
		if !ok {
			return true, unix.EADDRNOTAVAIL
		}
		a := pa.AddressWithPrefix.Address
		sub := pa.AddressWithPrefix.Subnet()
		switch cmd {
		case unix.SIOCGIFNETMASK:
			m := sub.Mask()
			a = tcpip.AddrFromSlice(m.AsSlice())
		case unix.SIOCGIFBRDADDR:
			a = sub.Broadcast()
		}
		putSockaddrIn(u, a)
	}
	_, err = io.CopyOut(arg, req[:])
	return true, err
}

func firstV4(addrs []tcpip.ProtocolAddress) (tcpip.ProtocolAddress, bool) {
	for _, pa := range addrs {
		if pa.Protocol == ipv4.ProtocolNumber {
			return pa, true
		}
	}
	return tcpip.ProtocolAddress{}, false
}

func putSockaddrIn(b []byte, a tcpip.Address) {
	binary.LittleEndian.PutUint16(b, unix.AF_INET)
	v := a.As4()
	copy(b[4:8], v[:])
}

func indexByte(b []byte, c byte) int {
	for i, x := range b {
		if x == c {
			return i
		}
	}
	return -1
}

// ifconf is SIOCGIFCONF: an ifreq with the IPv4 address of each
// interface that has one, or with a NULL buffer the length they need.
func ifconf(st *Stack, arg uintptr, io IoctlIO) error {
	var hdr [16]byte // struct ifconf: int ifc_len, pad, pointer
	if _, err := io.CopyIn(arg, hdr[:]); err != nil {
		return unix.EFAULT
	}
	room := int(int32(binary.LittleEndian.Uint32(hdr[:])))
	buf := uintptr(binary.LittleEndian.Uint64(hdr[8:]))
	var out []byte
	for _, ifc := range st.Interfaces() {
		pa, ok := firstV4(ifc.Addrs)
		if !ok {
			continue
		}
		var r [sizeofIfreq]byte
		copy(r[:16], ifc.Name)
		putSockaddrIn(r[16:], pa.AddressWithPrefix.Address)
		out = append(out, r[:]...)
	}
	n := len(out)
	if buf != 0 {
		n = min(n, room/sizeofIfreq*sizeofIfreq)
		if n > 0 {
			if _, err := io.CopyOut(buf, out[:n]); err != nil {
				return unix.EFAULT
			}
		}
	}
	binary.LittleEndian.PutUint32(hdr[:], uint32(n))
	_, err := io.CopyOut(arg, hdr[:4])
	return err
}
