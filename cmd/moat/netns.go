package main

import (
	"encoding/binary"
	"fmt"
	"net"
	"net/netip"
	"os"
	"runtime"
	"syscall"
	"unsafe"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/internal/control"
)

// nsGetNSType is NS_GET_NSTYPE (include/uapi/linux/nsfs.h).
const nsGetNSType = 0xb703

// netnsPath is the network namespace the config joins, "" for none (a
// new namespace: loopback only).
func netnsPath(spec *specs.Spec) string {
	if spec.Linux == nil {
		return ""
	}
	for _, ns := range spec.Linux.Namespaces {
		if ns.Type == specs.NetworkNamespace && ns.Path != "" {
			return ns.Path
		}
	}
	return ""
}

// openNetwork reads the interfaces, addresses and routes of the network
// namespace the config joins, and opens an AF_PACKET socket on each
// interface but loopback, which the sentry's netstack moves the
// interface's frames through; the CLI alone enters the namespace, the
// sentry never does. It returns no Network for a config without a
// namespace path. The namespace is not changed until takeAddresses.
func openNetwork(spec *specs.Spec) (n *control.Network, files []*os.File, err error) {
	path := netnsPath(spec)
	if path == "" {
		return nil, nil, nil
	}
	err = inNetns(path, func() error {
		n, files, err = readNetwork(path)
		return err
	})
	return n, files, err
}

// takeAddresses takes the addresses of the namespace's interfaces off
// them (the routes on them go with them), once the sandbox's stack
// answers for them, as runsc's --network=sandbox does: the host's stack
// would otherwise answer too, a connection to a listener it has not with
// a reset.
func takeAddresses(n *control.Network) error {
	return inNetns(n.Path, func() error {
		for _, l := range n.Links {
			ifc, err := net.InterfaceByName(l.Name)
			if err != nil {
				return fmt.Errorf("network namespace %s: %s: %w", n.Path, l.Name, err)
			}
			for _, a := range l.Addrs {
				p, err := netip.ParsePrefix(a)
				if err != nil {
					return fmt.Errorf("network namespace %s: %s: %w", n.Path, l.Name, err)
				}
				if err := delAddr(ifc.Index, p); err != nil {
					return fmt.Errorf("network namespace %s: %s: take %s off the interface: %w", n.Path, l.Name, p, err)
				}
			}
		}
		return nil
	})
}

// inNetns runs fn on a thread in network namespace path.
func inNetns(path string, fn func() error) error {
	nsfd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("network namespace %s: %w", path, err)
	}
	defer unix.Close(nsfd)
	if t, err := unix.IoctlRetInt(nsfd, nsGetNSType); err != nil || t != unix.CLONE_NEWNET {
		return fmt.Errorf("network namespace %s: not a network namespace", path)
	}
	done := make(chan error, 1)
	go func() {
		// The thread enters the namespace and is never used again: a
		// goroutine that ends locked takes its thread with it.
		runtime.LockOSThread()
		if err := unix.Setns(nsfd, unix.CLONE_NEWNET); err != nil {
			done <- fmt.Errorf("network namespace %s: setns: %w", path, err)
			return
		}
		done <- fn()
	}()
	return <-done
}

// readNetwork runs in the namespace.
func readNetwork(path string) (_ *control.Network, files []*os.File, err error) {
	defer func() {
		if err != nil {
			for _, f := range files {
				f.Close()
			}
			files = nil
		}
	}()
	n := &control.Network{Path: path}
	ifcs, err := net.Interfaces()
	if err != nil {
		return nil, nil, fmt.Errorf("network namespace %s: interfaces: %w", path, err)
	}
	routes, err := mainRoutes(ifcs)
	if err != nil {
		return nil, nil, fmt.Errorf("network namespace %s: routes: %w", path, err)
	}
	for _, ifc := range ifcs {
		if ifc.Flags&net.FlagLoopback != 0 || ifc.Flags&net.FlagUp == 0 {
			continue
		}
		addrs, err := ifc.Addrs()
		if err != nil {
			return nil, files, fmt.Errorf("network namespace %s: %s: %w", path, ifc.Name, err)
		}
		link := control.Link{Name: ifc.Name, MAC: ifc.HardwareAddr.String(), MTU: uint32(ifc.MTU)}
		for _, a := range addrs {
			ipn, ok := a.(*net.IPNet)
			if !ok {
				continue
			}
			ip, _ := netip.AddrFromSlice(ipn.IP)
			ones, _ := ipn.Mask.Size()
			link.Addrs = append(link.Addrs, netip.PrefixFrom(ip.Unmap(), ones).String())
		}
		f, err := packetSocket(ifc.Index)
		if err != nil {
			return nil, files, fmt.Errorf("network namespace %s: %s: packet socket: %w", path, ifc.Name, err)
		}
		files = append(files, f)
		n.Links = append(n.Links, link)
	}
	n.Route = routes
	return n, files, nil
}

// packetSocket opens an AF_PACKET socket for every protocol, bound to
// interface index.
func packetSocket(index int) (*os.File, error) {
	proto := int(htons(unix.ETH_P_ALL))
	fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, proto)
	if err != nil {
		return nil, err
	}
	if err := unix.Bind(fd, &unix.SockaddrLinklayer{Protocol: htons(unix.ETH_P_ALL), Ifindex: index}); err != nil {
		unix.Close(fd)
		return nil, err
	}
	return os.NewFile(uintptr(fd), "packet"), nil
}

func htons(v uint16) uint16 { return v<<8 | v>>8 }

// mainRoutes reads the namespace's main routing table (RTM_GETROUTE;
// golang.org/x/sys/unix has no netlink dump, the standard library does).
func mainRoutes(ifcs []net.Interface) ([]control.Route, error) {
	names := map[int]string{}
	for _, ifc := range ifcs {
		if ifc.Flags&net.FlagLoopback == 0 {
			names[ifc.Index] = ifc.Name
		}
	}
	rib, err := syscall.NetlinkRIB(unix.RTM_GETROUTE, unix.AF_UNSPEC)
	if err != nil {
		return nil, err
	}
	msgs, err := syscall.ParseNetlinkMessage(rib)
	if err != nil {
		return nil, err
	}
	var out []control.Route
	for _, m := range msgs {
		if m.Header.Type != unix.RTM_NEWROUTE || len(m.Data) < unix.SizeofRtMsg {
			continue
		}
		rt := (*unix.RtMsg)(unsafePointer(m.Data))
		if rt.Table != unix.RT_TABLE_MAIN || rt.Type != unix.RTN_UNICAST {
			continue
		}
		attrs, err := syscall.ParseNetlinkRouteAttr(&m)
		if err != nil {
			return nil, err
		}
		var dst, gw netip.Addr
		link := ""
		for _, a := range attrs {
			switch a.Attr.Type {
			case unix.RTA_DST:
				dst, _ = netip.AddrFromSlice(a.Value)
			case unix.RTA_GATEWAY:
				gw, _ = netip.AddrFromSlice(a.Value)
			case unix.RTA_OIF:
				if len(a.Value) >= 4 {
					link = names[int(binary.LittleEndian.Uint32(a.Value))]
				}
			}
		}
		if link == "" {
			continue
		}
		if !dst.IsValid() {
			dst = netip.IPv4Unspecified()
			if rt.Family == unix.AF_INET6 {
				dst = netip.IPv6Unspecified()
			}
		}
		r := control.Route{Dest: netip.PrefixFrom(dst, int(rt.Dst_len)).String(), Link: link}
		if gw.IsValid() {
			r.Gateway = gw.String()
		}
		out = append(out, r)
	}
	return out, nil
}

// delAddr removes an address from an interface (RTM_DELADDR).
func delAddr(index int, p netip.Prefix) error {
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_ROUTE)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	a := p.Addr()
	family := byte(unix.AF_INET6)
	if a.Is4() {
		family = unix.AF_INET
	}
	body := []byte{family, byte(p.Bits()), 0, 0}
	body = binary.LittleEndian.AppendUint32(body, uint32(index))
	attr := func(typ uint16, v []byte) {
		h := binary.LittleEndian.AppendUint16(nil, uint16(4+len(v)))
		h = binary.LittleEndian.AppendUint16(h, typ)
		body = append(append(body, h...), v...)
		for len(body)%4 != 0 {
			body = append(body, 0)
		}
	}
	attr(unix.IFA_LOCAL, a.AsSlice())
	attr(unix.IFA_ADDRESS, a.AsSlice())
	msg := binary.LittleEndian.AppendUint32(nil, uint32(unix.SizeofNlMsghdr+len(body)))
	msg = binary.LittleEndian.AppendUint16(msg, unix.RTM_DELADDR)
	msg = binary.LittleEndian.AppendUint16(msg, unix.NLM_F_REQUEST|unix.NLM_F_ACK)
	msg = binary.LittleEndian.AppendUint32(msg, 1)
	msg = binary.LittleEndian.AppendUint32(msg, 0)
	msg = append(msg, body...)
	if err := unix.Sendto(fd, msg, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return err
	}
	buf := make([]byte, 4096)
	n, _, err := unix.Recvfrom(fd, buf, 0)
	if err != nil {
		return err
	}
	msgs, err := syscall.ParseNetlinkMessage(buf[:n])
	if err != nil {
		return err
	}
	for _, m := range msgs {
		if m.Header.Type == unix.NLMSG_ERROR && len(m.Data) >= 4 {
			if e := int32(binary.LittleEndian.Uint32(m.Data)); e != 0 && unix.Errno(-e) != unix.EADDRNOTAVAIL {
				return unix.Errno(-e)
			}
		}
	}
	return nil
}

// unsafePointer is the start of b, to read a fixed netlink struct.
func unsafePointer(b []byte) unsafe.Pointer { return unsafe.Pointer(&b[0]) }
