// Package e2b is `moat serve`: a server that speaks E2B's API, so that
// E2B's SDKs, unmodified, create moat sandboxes and work in them. It
// serves both halves of what the SDKs call: the control plane (create,
// list, kill sandboxes, their timeouts) and the API of envd, the daemon
// that E2B runs inside each sandbox, which moat answers from outside:
// no daemon runs in the guest, and nothing the guest does reaches the
// server but what its processes print and its files hold.
//
// The server must never let one sandbox's requests reach another's
// (each carries its sandbox's access token), nor let a request without
// the API key create, list or kill anything. It must never act on the
// host's files for a request: every file operation runs in the sandbox.
package e2b

import (
	"context"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

// envdVersion is the envd version the server claims: the SDKs turn on
// features by it. 0.5.7 has closeStdin (0.5.2), a default user chosen by
// the sandbox (0.4.0) and octet-stream uploads (0.5.7), all of which
// moat implements; file metadata (0.6.2) and watch entries (0.6.3) it
// does not, so no later version is claimed.
const envdVersion = "0.5.7"

// envdPort is the port the SDKs address envd at.
const envdPort = 49983

// Config is what `moat serve` runs with.
type Config struct {
	APIKey string
	// StateDir holds the sandboxes' moat state and bundles.
	StateDir string
	// Templates name the root file systems sandboxes are made from.
	Templates map[string]string
	// TemplateEnv is, by template, the environment its image sets
	// (KEY=VALUE, an OCI image config's Env): the base of every
	// process's, under the user's HOME, USER and LOGNAME, the sandbox's
	// envVars and the process's own.
	TemplateEnv map[string][]string
	// Moat is the moat binary and Flags its global flags (--platform).
	Moat  string
	Flags []string
	// Pool is the most sandboxes of each template kept booted ahead
	// (how many follows the demand: pool.go); 0 for none.
	Pool int
	// Limits are every sandbox's; the zero value is DefaultLimits.
	Limits Limits
	// Domain, if set, routes requests whose Host is
	// <port>-<sandbox id>.<Domain> to that sandbox, as E2B's proxy does.
	Domain string
	// Log receives a line per sandbox event; nil for none.
	Log func(format string, args ...any)

	// The pools' clock and view of the host's memory: time.Now and
	// hostMemoryLeavesRoom unless a test sets them.
	now              func() time.Time
	memoryLeavesRoom func() bool
}

// Server is a running `moat serve`.
type Server struct {
	cfg       Config
	rt        *runtime
	sandboxes registry
	pools     map[string]*pool
	metrics   *metrics
	filling   sync.WaitGroup
	creating  sync.WaitGroup
	closing   chan struct{}
	closeOnce sync.Once
}

// New prepares a server: it removes what a server that died at cfg's
// state directory left behind.
func New(cfg Config) (*Server, error) {
	if cfg.APIKey == "" {
		return nil, errors.New("an API key is required")
	}
	for name, dir := range cfg.Templates {
		info, err := os.Stat(dir)
		if err != nil || !info.IsDir() {
			return nil, fmt.Errorf("template %s: %s is not a directory", name, dir)
		}
	}
	if cfg.Limits == (Limits{}) {
		cfg.Limits = DefaultLimits
	}
	if err := cfg.Limits.check(); err != nil {
		return nil, err
	}
	rt, err := newRuntime(cfg.Moat, cfg.Flags, cfg.StateDir, cfg.Limits)
	if err != nil {
		return nil, err
	}
	if err := rt.sweep(); err != nil {
		return nil, fmt.Errorf("cleaning what the last server left: %w", err)
	}
	if cfg.Log == nil {
		cfg.Log = func(string, ...any) {}
	}
	s := &Server{cfg: cfg, rt: rt, sandboxes: registry{m: make(map[string]*sandbox)},
		pools: make(map[string]*pool), metrics: newMetrics(), closing: make(chan struct{})}
	if cfg.Pool > 0 {
		for name, rootfs := range cfg.Templates {
			p := newPool(name, rootfs, cfg.Pool)
			if cfg.now != nil {
				p.now = cfg.now
			}
			if cfg.memoryLeavesRoom != nil {
				p.memoryLeavesRoom = cfg.memoryLeavesRoom
			}
			s.pools[name] = p
			s.filling.Add(1)
			go s.fill(p, &s.filling)
		}
	}
	return s, nil
}

// Handler is the server's HTTP handler: envd's API for a request that
// names a sandbox, the control plane for any other.
func (s *Server) Handler() http.Handler {
	api := s.apiMux()
	envd := &envdHandler{s: s, mux: envdMux()}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if id, port, ok := s.route(r); ok {
			envd.serve(w, r, id, port)
			return
		}
		api.ServeHTTP(w, r)
	})
}

// route finds the sandbox a request is for: the E2b-Sandbox-Id header
// (the SDKs send it to E2B_SANDBOX_URL), or a Host of
// <port>-<id>.<domain>.
func (s *Server) route(r *http.Request) (id string, port int, ok bool) {
	if id := r.Header.Get("E2b-Sandbox-Id"); id != "" {
		port, err := strconv.Atoi(r.Header.Get("E2b-Sandbox-Port"))
		if err != nil {
			port = envdPort
		}
		return id, port, true
	}
	if s.cfg.Domain == "" {
		return "", 0, false
	}
	host := r.Host
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	sub, ok := strings.CutSuffix(host, "."+s.cfg.Domain)
	if !ok {
		return "", 0, false
	}
	p, id, ok := strings.Cut(sub, "-")
	port, err := strconv.Atoi(p)
	if !ok || err != nil || id == "" {
		return "", 0, false
	}
	return id, port, true
}

// Close kills every sandbox, those its pools hold too, and waits for
// creations under way.
func (s *Server) Close() {
	s.closeOnce.Do(func() { close(s.closing) })
	s.creating.Wait()
	s.filling.Wait()
	for _, p := range s.pools {
		s.drain(p)
	}
	var wg sync.WaitGroup
	for _, sb := range s.sandboxes.list() {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.kill(sb.id, "the server is stopping")
		}()
	}
	wg.Wait()
}

// kill ends sandbox id for reason; false if there is none.
func (s *Server) kill(id, reason string) bool {
	sb := s.sandboxes.take(id)
	if sb == nil {
		return false
	}
	sb.mu.Lock()
	sb.dead = true
	if sb.timer != nil {
		sb.timer.Stop()
	}
	sb.mu.Unlock()
	sb.closePorts()
	ctx, cancel := context.WithTimeout(context.Background(), statsTimeout)
	s.metrics.killed(sb.egressDenied(ctx))
	cancel()
	if err := s.rt.destroy(sb.inst); err != nil {
		s.cfg.Log("sandbox %s: %v", id, err)
	}
	s.cfg.Log("sandbox %s: killed (%s)", id, reason)
	return true
}

// envdHandler serves envd's API for the sandbox a request names.
type envdHandler struct {
	s   *Server
	mux map[string]envdCall
}

// envdCall is one envd endpoint.
type envdCall func(w http.ResponseWriter, r *http.Request, sb *sandbox, u guestUser)

func (h *envdHandler) serve(w http.ResponseWriter, r *http.Request, id string, port int) {
	sb := h.s.sandboxes.get(id)
	if sb == nil {
		// What E2B's proxy answers for a sandbox that is not running:
		// the SDKs read 502 as "the sandbox is gone".
		envdError(w, http.StatusBadGateway, "sandbox %s is not running", id)
		return
	}
	sb.mu.Lock()
	paused := sb.paused
	sb.mu.Unlock()
	if paused {
		envdError(w, http.StatusBadGateway, "sandbox %s is paused", id)
		return
	}
	if port != envdPort {
		h.s.proxyPort(w, r, sb, port)
		return
	}
	if r.URL.Path == "/health" {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	token := r.Header.Get("X-Access-Token")
	if subtle.ConstantTimeCompare([]byte(token), []byte(sb.token)) != 1 {
		envdError(w, http.StatusUnauthorized, "invalid access token")
		return
	}
	call, ok := h.mux[r.Method+" "+r.URL.Path]
	if !ok {
		if strings.Count(r.URL.Path, "/") == 2 && r.Method == http.MethodPost {
			e := rpcErrorf(codeUnimplemented, "%s is not implemented by moat serve", r.URL.Path)
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(rpcStatus(e.Code))
			w.Write([]byte(fmt.Sprintf(`{"code":%q,"message":%q}`, e.Code, e.Message)))
			return
		}
		envdError(w, http.StatusNotFound, "%s %s: no such endpoint", r.Method, r.URL.Path)
		return
	}
	u, err := sb.lookupUser(requestUser(r))
	if err != nil {
		envdErrorFor(w, err)
		return
	}
	call(w, r, sb, u)
}

// requestUser is the user a request names: Basic authorization's user
// (the SDKs' way), or the username query parameter (/files').
func requestUser(r *http.Request) string {
	if name := r.URL.Query().Get("username"); name != "" {
		return name
	}
	auth, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Basic ")
	if !ok {
		return ""
	}
	raw, err := base64.StdEncoding.DecodeString(strings.TrimSpace(auth))
	if err != nil {
		return ""
	}
	name, _, _ := strings.Cut(string(raw), ":")
	return name
}

// keepaliveInterval is the Keepalive-Ping-Interval the client asked for,
// in seconds; 0 for none.
func keepaliveInterval(r *http.Request) time.Duration {
	n, err := strconv.Atoi(r.Header.Get("Keepalive-Ping-Interval"))
	if err != nil || n <= 0 {
		return 0
	}
	return time.Duration(n) * time.Second
}

func envdMux() map[string]envdCall {
	return map[string]envdCall{
		"GET /files":  download,
		"POST /files": upload,

		"POST /process.Process/Start":   startCall,
		"POST /process.Process/Connect": connectCall,
		"POST /process.Process/List": unaryCall(func(sb *sandbox, _ context.Context, _ guestUser, _ *empty) (*listResponse, error) {
			return sb.listProcesses(), nil
		}),
		"POST /process.Process/SendInput":  unaryCall(emptyReply((*sandbox).sendInput)),
		"POST /process.Process/SendSignal": unaryCall(emptyReply((*sandbox).sendSignal)),
		"POST /process.Process/CloseStdin": unaryCall(emptyReply((*sandbox).closeStdinOf)),
		"POST /process.Process/Update":     unaryCall(emptyReply((*sandbox).update)),

		"POST /filesystem.Filesystem/Stat":    unaryCall((*sandbox).statRPC),
		"POST /filesystem.Filesystem/ListDir": unaryCall((*sandbox).listDir),
		"POST /filesystem.Filesystem/MakeDir": unaryCall((*sandbox).makeDir),
		"POST /filesystem.Filesystem/Move":    unaryCall((*sandbox).move),
		"POST /filesystem.Filesystem/Remove":  unaryCall((*sandbox).remove),

		"POST /filesystem.Filesystem/WatchDir":         watchCall,
		"POST /filesystem.Filesystem/CreateWatcher":    unaryCall((*sandbox).createWatcher),
		"POST /filesystem.Filesystem/GetWatcherEvents": unaryCall((*sandbox).watcherEvents),
		"POST /filesystem.Filesystem/RemoveWatcher":    unaryCall((*sandbox).removeWatcher),
	}
}

// unaryCall makes fn a unary Connect endpoint.
func unaryCall[Req, Resp any](fn func(*sandbox, context.Context, guestUser, *Req) (*Resp, error)) envdCall {
	return func(w http.ResponseWriter, r *http.Request, sb *sandbox, u guestUser) {
		serveUnary(w, r, func(ctx context.Context, req *Req) (*Resp, error) { return fn(sb, ctx, u, req) })
	}
}

// emptyReply adapts a call whose answer is an empty message.
func emptyReply[Req any](fn func(*sandbox, *Req) error) func(*sandbox, context.Context, guestUser, *Req) (*empty, error) {
	return func(sb *sandbox, _ context.Context, _ guestUser, req *Req) (*empty, error) {
		if err := fn(sb, req); err != nil {
			return nil, err
		}
		return &empty{}, nil
	}
}

func startCall(w http.ResponseWriter, r *http.Request, sb *sandbox, u guestUser) {
	serveStream(w, r, func(ctx context.Context, req *startRequest, s *stream) error {
		p, outs, err := sb.startProcess(u, req)
		if err != nil {
			return err
		}
		p.subscribe(s)
		sb.begin(p, outs)
		return p.follow(ctx, s, keepaliveInterval(r))
	})
}

func connectCall(w http.ResponseWriter, r *http.Request, sb *sandbox, _ guestUser) {
	serveStream(w, r, func(ctx context.Context, req *connectRequest, s *stream) error {
		p, err := sb.find(req.Process)
		if err != nil {
			return err
		}
		if !p.subscribe(s) {
			return rpcErrorf(codeNotFound, "process %d has ended", p.pid)
		}
		return p.follow(ctx, s, keepaliveInterval(r))
	})
}
