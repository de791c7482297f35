package boot

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"golang.org/x/sys/unix"
	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/adapters/gonet"
	"gvisor.dev/gvisor/pkg/tcpip/network/ipv4"
	"gvisor.dev/gvisor/pkg/tcpip/network/ipv6"

	"github.com/moat-sandbox/moat/internal/control"
	"github.com/moat-sandbox/moat/sentry/net/netstack"
)

// connectTimeout bounds a connection to a guest port. On loopback a
// connect is answered at once (accepted or refused); only a listener
// whose backlog is full makes it wait.
const connectTimeout = 5 * time.Second

// serveConnect answers control.OpConnect: it connects to the guest's
// port req.Port inside the sandbox's network stack and, once that has
// succeeded, passes bytes both ways between the connection and the host
// socket that came with the request. The host side's end (EOF or an
// error) ends the connection: its owner (moat serve's HTTP transport)
// never half-closes, so an end means it is done with the connection.
func (s *Sandbox) serveConnect(conn *control.Conn, req control.Request, files []*os.File) {
	defer conn.Close()
	if len(files) != 1 {
		for _, f := range files {
			f.Close()
		}
		conn.Send(control.Response{Error: fmt.Sprintf("connect: %d descriptors, want the one socket", len(files))})
		return
	}
	host := files[0]
	guest, err := s.dialGuest(req.Port)
	if err != nil {
		host.Close()
		conn.Send(errorResponse(err))
		return
	}
	if err := conn.Send(control.Response{}); err != nil {
		host.Close()
		guest.Close()
		return
	}
	go relay(host, guest)
}

// dialGuest connects to port on the guest's loopback: 127.0.0.1, then
// ::1, so that a server listening on either family, or on a wildcard
// address, is reached.
func (s *Sandbox) dialGuest(port int) (*gonet.TCPConn, error) {
	if port < 1 || port > 65535 {
		return nil, fmt.Errorf("connect: port %d is not a TCP port", port)
	}
	st, err := netstack.Of(s.Kernel)
	if err != nil {
		return nil, fmt.Errorf("connect: %w", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), connectTimeout)
	defer cancel()
	v4 := tcpip.FullAddress{NIC: netstack.LoopbackNIC, Addr: tcpip.AddrFrom4([4]byte{127, 0, 0, 1}), Port: uint16(port)}
	c, err := gonet.DialContextTCP(ctx, st.S, v4, ipv4.ProtocolNumber)
	if err == nil {
		return c, nil
	}
	v6 := tcpip.FullAddress{NIC: netstack.LoopbackNIC, Addr: tcpip.AddrFrom16([16]byte{15: 1}), Port: uint16(port)}
	if c, err6 := gonet.DialContextTCP(ctx, st.S, v6, ipv6.ProtocolNumber); err6 == nil {
		return c, nil
	}
	return nil, fmt.Errorf("connect to port %d of the sandbox: %w", port, err)
}

// relay copies between host and guest until the host side ends or the
// guest closes; the guest's close is passed on as a half-close of the
// host socket, so that a response read to EOF ends there.
func relay(host *os.File, guest *gonet.TCPConn) {
	hostDone := make(chan struct{})
	go func() {
		io.Copy(guest, host)
		guest.Close() // also ends the copy below, if the guest is still sending
		close(hostDone)
	}()
	io.Copy(host, guest)
	if rc, err := host.SyscallConn(); err == nil {
		rc.Control(func(fd uintptr) { unix.Shutdown(int(fd), unix.SHUT_WR) })
	}
	<-hostDone
	host.Close()
}
