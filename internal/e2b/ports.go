package e2b

import (
	"context"
	"crypto/subtle"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"os"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/internal/control"
)

// trafficTokenHeader carries a sandbox's traffic access token: a sandbox
// created with network.allowPublicTraffic false answers on its ports
// only to requests that carry it, as E2B's proxy does.
const trafficTokenHeader = "E2b-Traffic-Access-Token"

// ingress is how a sandbox's ports other than envd's are reached:
// getHost(port)'s URLs, which the server passes to whatever listens on
// that port in the sandbox.
type ingress struct {
	// token, if set, is required in trafficTokenHeader (allowPublicTraffic
	// false); "" lets every request through.
	token string
	// hostMask, if set, is the Host the guest sees (maskRequestHost;
	// ${PORT} in it is the port); "" passes the request's own.
	hostMask string
}

// sandboxIngress reads a create's network (which sandboxEgress has
// checked) for its ports' settings.
func sandboxIngress(n sandboxNetwork) ingress {
	var in ingress
	if n.AllowPublicTraffic != nil && !*n.AllowPublicTraffic {
		in.token = randomToken()
	}
	if n.MaskRequestHost != nil {
		in.hostMask = *n.MaskRequestHost
	}
	return in
}

// proxyPort passes r to port of sb: a connection the sentry makes to the
// guest's loopback inside the sandbox's network stack
// (control.OpConnect), so that no host port is opened and the sandbox's
// network settings do not matter. Upgrades (WebSockets) and streamed
// answers go through.
func (s *Server) proxyPort(w http.ResponseWriter, r *http.Request, sb *sandbox, port int) {
	if t := sb.ingress.token; t != "" && subtle.ConstantTimeCompare([]byte(r.Header.Get(trafficTokenHeader)), []byte(t)) != 1 {
		envdError(w, http.StatusForbidden, "port %d of sandbox %s: missing or wrong %s", port, sb.id, trafficTokenHeader)
		return
	}
	rp := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.Out.URL.Scheme = "http"
			pr.Out.URL.Host = net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
			if m := sb.ingress.hostMask; m != "" {
				pr.Out.Host = strings.ReplaceAll(m, "${PORT}", strconv.Itoa(port))
			}
			for _, h := range []string{"E2b-Sandbox-Id", "E2b-Sandbox-Port", trafficTokenHeader} {
				pr.Out.Header.Del(h)
			}
		},
		Transport:     sb.portTransport(),
		FlushInterval: -1,
		ErrorHandler: func(w http.ResponseWriter, _ *http.Request, err error) {
			envdError(w, http.StatusBadGateway, "port %d of sandbox %s: %v", port, sb.id, err)
		},
	}
	rp.ServeHTTP(w, r)
}

// portTransport is sb's HTTP transport to its ports, made at first use:
// its idle connections are kept for the next request, and closed when
// the sandbox is killed.
func (sb *sandbox) portTransport() *http.Transport {
	sb.mu.Lock()
	defer sb.mu.Unlock()
	if sb.ports == nil {
		sb.ports = &http.Transport{
			DialContext: func(ctx context.Context, _, addr string) (net.Conn, error) {
				_, p, err := net.SplitHostPort(addr)
				if err != nil {
					return nil, err
				}
				port, err := strconv.Atoi(p)
				if err != nil {
					return nil, fmt.Errorf("port %q: %w", p, err)
				}
				return sb.inst.connect(ctx, port)
			},
			MaxIdleConnsPerHost: 8,
			IdleConnTimeout:     30 * time.Second,
		}
	}
	return sb.ports
}

// closePorts drops the idle connections to sb's ports.
func (sb *sandbox) closePorts() {
	sb.mu.Lock()
	t := sb.ports
	sb.mu.Unlock()
	if t != nil {
		t.CloseIdleConnections()
	}
}

// connect opens a connection to the guest's port: one end of a socket
// pair goes to the sentry, which joins it to a connection inside the
// sandbox (control.OpConnect); the other is the connection.
func (inst *instance) connect(ctx context.Context, port int) (net.Conn, error) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC|unix.SOCK_NONBLOCK, 0)
	if err != nil {
		return nil, fmt.Errorf("connect to port %d: %w", port, err)
	}
	ours, theirs := os.NewFile(uintptr(fds[0]), "port"), os.NewFile(uintptr(fds[1]), "port")
	_, err = inst.call(ctx, control.Request{Op: control.OpConnect, Port: port}, theirs)
	theirs.Close() // the sentry holds its own once sent
	if err != nil {
		ours.Close()
		return nil, err
	}
	c, err := net.FileConn(ours)
	ours.Close()
	return c, err
}
