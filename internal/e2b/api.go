package e2b

import (
	"bytes"
	"crypto/subtle"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// E2B's control-plane REST API (E2B's openapi.yml), the part its SDKs
// call to create, find, list and kill sandboxes and to set their
// timeouts.

// Sandbox timeouts, in seconds: E2B's default for a create that names
// none, and the longest it allows.
const (
	defaultTimeout = 15
	maxTimeout     = 24 * 60 * 60
)

// maxBody bounds a control-plane request.
const maxBody = 1 << 20

// newSandboxRequest is POST /sandboxes' body. Fields the server cannot
// honour are read so that asking for them fails rather than being
// ignored.
type newSandboxRequest struct {
	TemplateID          string            `json:"templateID"`
	Timeout             *int64            `json:"timeout"`
	Metadata            map[string]string `json:"metadata"`
	EnvVars             map[string]string `json:"envVars"`
	AutoPause           *bool             `json:"autoPause"`
	AllowInternetAccess *bool             `json:"allow_internet_access"`
	Network             json.RawMessage   `json:"network"`
	VolumeMounts        json.RawMessage   `json:"volumeMounts"`
	MCP                 json.RawMessage   `json:"mcp"`
}

// sandboxJSON is the Sandbox, SandboxDetail and ListedSandbox of E2B's
// API: one shape with the fields each needs.
type sandboxJSON struct {
	TemplateID      string `json:"templateID"`
	SandboxID       string `json:"sandboxID"`
	ClientID        string `json:"clientID"`
	Alias           string `json:"alias,omitempty"`
	EnvdVersion     string `json:"envdVersion"`
	EnvdAccessToken string `json:"envdAccessToken,omitempty"`
	// TrafficAccessToken is what requests to the sandbox's ports must
	// carry (ports.go), when it was created without public traffic.
	TrafficAccessToken string            `json:"trafficAccessToken,omitempty"`
	Domain             *string           `json:"domain"`
	StartedAt          *time.Time        `json:"startedAt,omitempty"`
	EndAt              *time.Time        `json:"endAt,omitempty"`
	CPUCount           int               `json:"cpuCount,omitempty"`
	MemoryMB           int               `json:"memoryMB,omitempty"`
	DiskSizeMB         int               `json:"diskSizeMB,omitempty"`
	Metadata           map[string]string `json:"metadata,omitempty"`
	State              string            `json:"state,omitempty"`
}

// clientID is what every sandbox's clientID says: E2B's API names the
// cluster client there; moat has one.
const clientID = "moat"

// apiError writes E2B's error body, {"code": status, "message": ...}.
func apiError(w http.ResponseWriter, status int, format string, args ...any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]any{"code": status, "message": fmt.Sprintf(format, args...)})
}

// writeJSON answers v as JSON, with its length: a flushed answer is then
// complete, and the client need not wait for the handler's end.
func writeJSON(w http.ResponseWriter, status int, v any) {
	data, err := json.Marshal(v)
	if err != nil {
		apiError(w, http.StatusInternalServerError, "encoding the answer: %v", err)
		return
	}
	data = append(data, '\n')
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(data)))
	w.WriteHeader(status)
	w.Write(data)
}

func (s *Server) apiMux() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /sandboxes", s.createSandbox)
	mux.HandleFunc("POST /v2/sandboxes", s.createSandbox)
	mux.HandleFunc("GET /sandboxes", s.listSandboxes)
	mux.HandleFunc("GET /v2/sandboxes", s.listSandboxes)
	mux.HandleFunc("GET /sandboxes/{id}", s.getSandbox)
	mux.HandleFunc("DELETE /sandboxes/{id}", s.deleteSandbox)
	mux.HandleFunc("POST /sandboxes/{id}/timeout", s.setTimeout)
	mux.HandleFunc("POST /sandboxes/{id}/connect", s.connectSandbox)
	mux.HandleFunc("POST /v2/sandboxes/{id}/connect", s.connectSandbox)
	mux.HandleFunc("POST /sandboxes/{id}/pause", s.pauseSandbox)
	mux.HandleFunc("POST /sandboxes/{id}/resume", s.resumeSandbox)
	mux.HandleFunc("GET /sandboxes/{id}/metrics", s.sandboxMetrics)
	mux.HandleFunc("PUT /sandboxes/{id}/network", s.updateNetwork)
	mux.HandleFunc("GET /metrics", s.serveMetrics)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		apiError(w, http.StatusNotFound, "%s %s: no such endpoint", r.Method, r.URL.Path)
	})
	return s.requireKey(mux)
}

// requireKey answers 401 to a request without the API key.
func (s *Server) requireKey(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key := r.Header.Get("X-API-Key")
		if subtle.ConstantTimeCompare([]byte(key), []byte(s.cfg.APIKey)) != 1 {
			apiError(w, http.StatusUnauthorized, "Invalid API key")
			return
		}
		next.ServeHTTP(w, r)
	})
}

// pathSandbox is the sandbox the request's path names, or nil after
// answering 404 in E2B's shape.
func (s *Server) pathSandbox(w http.ResponseWriter, r *http.Request) *sandbox {
	sb := s.sandboxes.get(r.PathValue("id"))
	if sb == nil {
		apiError(w, http.StatusNotFound, "sandbox %q not found", r.PathValue("id"))
	}
	return sb
}

// notImplemented answers 501 for an E2B call moat does not implement, after
// 404 for a sandbox that does not exist.
func (s *Server) notImplemented(what string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if s.pathSandbox(w, r) == nil {
			return
		}
		apiError(w, http.StatusNotImplemented, "%s is not implemented by moat serve", what)
	}
}

// decodeBody reads r's JSON body into v; an empty body leaves v as it is.
func decodeBody(r *http.Request, v any) error {
	data, err := io.ReadAll(io.LimitReader(r.Body, maxBody+1))
	if err != nil {
		return err
	}
	if len(data) > maxBody {
		return fmt.Errorf("body larger than %d bytes", maxBody)
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return nil
	}
	return json.Unmarshal(data, v)
}

// checkTimeout says what is wrong with a timeout in seconds.
func checkTimeout(t int64) error {
	if t < 0 || t > maxTimeout {
		return fmt.Errorf("timeout %d s is out of range: 0 to %d seconds", t, maxTimeout)
	}
	return nil
}

// timeoutOrDefault is a request's timeout (seconds), or E2B's default if
// it names none, checked.
func timeoutOrDefault(t *int64) (time.Duration, error) {
	v := int64(defaultTimeout)
	if t != nil {
		v = *t
	}
	if err := checkTimeout(v); err != nil {
		return 0, err
	}
	return time.Duration(v) * time.Second, nil
}

func (s *Server) createSandbox(w http.ResponseWriter, r *http.Request) {
	var req newSandboxRequest
	if err := decodeBody(r, &req); err != nil {
		apiError(w, http.StatusBadRequest, "request body: %v", err)
		return
	}
	timeout := int64(defaultTimeout)
	if req.Timeout != nil {
		timeout = *req.Timeout
	}
	var problem string
	network, netProblem := sandboxEgress(req.AllowInternetAccess, req.Network)
	switch {
	case req.TemplateID == "":
		problem = "templateID is required"
	case checkTimeout(timeout) != nil:
		problem = checkTimeout(timeout).Error()
	case netProblem != "":
		problem = netProblem
	case len(req.VolumeMounts) > 0 && string(req.VolumeMounts) != "null":
		problem = "volumeMounts: moat serve has no volumes"
	case len(req.MCP) > 0 && string(req.MCP) != "null":
		problem = "mcp: moat serve has no MCP gateway"
	}
	if problem != "" {
		apiError(w, http.StatusBadRequest, "%s", problem)
		return
	}
	rootfs, ok := s.cfg.Templates[req.TemplateID]
	if !ok {
		apiError(w, http.StatusNotFound, "template %q not found", req.TemplateID)
		return
	}
	n, _ := decodeNetwork(req.Network) // sandboxEgress has read it
	sb, refill, err := s.boot(req.TemplateID, rootfs, network, sandboxIngress(n), req.Metadata, req.EnvVars, time.Duration(timeout)*time.Second)
	if err != nil {
		apiError(w, http.StatusInternalServerError, "creating the sandbox: %v", err)
		return
	}
	if req.AutoPause != nil {
		sb.mu.Lock()
		sb.autoPause = *req.AutoPause
		sb.mu.Unlock()
	}
	writeJSON(w, http.StatusCreated, s.describe(sb, true))
	// The replacement of a sandbox from a pool boots once the answer is
	// out: a boot takes the host's CPUs for a while, and the caller is
	// waiting for this answer.
	http.NewResponseController(w).Flush()
	refill()
}

// boot creates a sandbox of template with network and registers it, to
// be killed once timeout passes. A sandbox from a pool (whose sandboxes
// have loopback alone: one with another network is booted for its
// request) is replaced once refill is called, which must be, also when
// boot fails.
func (s *Server) boot(template, rootfs string, network egress, in ingress, metadata, env map[string]string, timeout time.Duration) (_ *sandbox, refill func(), _ error) {
	refill = func() {}
	s.creating.Add(1)
	defer s.creating.Done()
	select {
	case <-s.closing:
		return nil, refill, fmt.Errorf("the server is shutting down")
	default:
	}
	start := time.Now()
	how := "booted"
	var inst *instance
	if p := s.pools[template]; p != nil && network.pooled() {
		if inst = p.take(); inst != nil {
			refill = p.release
		}
		how = "from the pool"
	}
	outcome := createdFromPool
	if inst == nil {
		var err error
		if inst, err = s.rt.create(randomID(20), rootfs, network); err != nil {
			s.metrics.created(createFailed, time.Since(start))
			return nil, refill, err
		}
		how, outcome = "booted", createdByBoot
	}
	id := inst.id
	sb := &sandbox{id: id, templateID: template, rootfs: rootfs, token: randomToken(),
		metadata: metadata, envVars: env, imageEnv: s.cfg.TemplateEnv[template], startedAt: time.Now().UTC(), inst: inst,
		created: network, ingress: in, procs: make(map[uint32]*process)}
	sb.allowlisted.Store(network.user && network.allow != nil)
	if sb.metadata == nil {
		sb.metadata = map[string]string{}
	}
	s.sandboxes.add(sb)
	s.setDeadline(sb, timeout)
	s.metrics.created(outcome, time.Since(start))
	s.cfg.Log("sandbox %s: template %s, %s, %s in %v", id, template, network, how, time.Since(start).Round(time.Microsecond))
	return sb, refill, nil
}

// setDeadline (re)sets when sb is killed: timeout from now.
func (s *Server) setDeadline(sb *sandbox, timeout time.Duration) {
	sb.mu.Lock()
	defer sb.mu.Unlock()
	if sb.timer != nil {
		sb.timer.Stop()
	}
	sb.endAt = time.Now().Add(timeout).UTC()
	sb.timer = time.AfterFunc(timeout, func() { s.expire(sb) })
}

// describe is sb as the API shows it; with the access token for its
// creator (and connect's caller), who need it to reach envd.
func (s *Server) describe(sb *sandbox, token bool) sandboxJSON {
	sb.mu.Lock()
	endAt, state := sb.endAt, "running"
	if sb.paused {
		state = "paused"
	}
	sb.mu.Unlock()
	started := sb.startedAt
	j := sandboxJSON{TemplateID: sb.templateID, SandboxID: sb.id, ClientID: clientID, EnvdVersion: envdVersion,
		StartedAt: &started, EndAt: &endAt, CPUCount: s.cfg.Limits.CPUs, MemoryMB: int(s.cfg.Limits.MemoryMB), Metadata: sb.metadata, State: state}
	if token {
		j.EnvdAccessToken = sb.token
		j.TrafficAccessToken = sb.ingress.token
	}
	return j
}

func (s *Server) getSandbox(w http.ResponseWriter, r *http.Request) {
	sb := s.pathSandbox(w, r)
	if sb == nil {
		return
	}
	writeJSON(w, http.StatusOK, s.describe(sb, true))
}

func (s *Server) deleteSandbox(w http.ResponseWriter, r *http.Request) {
	if !s.kill(r.PathValue("id"), "DELETE") {
		apiError(w, http.StatusNotFound, "sandbox %q not found", r.PathValue("id"))
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

type timeoutRequest struct {
	Timeout *int64 `json:"timeout"`
}

func (s *Server) setTimeout(w http.ResponseWriter, r *http.Request) {
	var req timeoutRequest
	if err := decodeBody(r, &req); err != nil {
		apiError(w, http.StatusBadRequest, "request body: %v", err)
		return
	}
	if req.Timeout == nil {
		apiError(w, http.StatusBadRequest, "timeout is required")
		return
	}
	if err := checkTimeout(*req.Timeout); err != nil {
		apiError(w, http.StatusBadRequest, "%v", err)
		return
	}
	sb := s.pathSandbox(w, r)
	if sb == nil {
		return
	}
	s.setDeadline(sb, time.Duration(*req.Timeout)*time.Second)
	w.WriteHeader(http.StatusNoContent)
}

// connectSandbox answers Sandbox.connect: a paused sandbox resumes (201),
// a running one has its timeout set anew if the body gives one (never
// shortened, as E2B's).
func (s *Server) connectSandbox(w http.ResponseWriter, r *http.Request) {
	var req timeoutRequest
	if err := decodeBody(r, &req); err != nil {
		apiError(w, http.StatusBadRequest, "request body: %v", err)
		return
	}
	timeout, err := timeoutOrDefault(req.Timeout)
	if err != nil {
		apiError(w, http.StatusBadRequest, "%v", err)
		return
	}
	sb := s.pathSandbox(w, r)
	if sb == nil {
		return
	}
	// A paused sandbox resumes, for the timeout asked or the default,
	// and says so with 201, as E2B's connect does.
	switch err := s.resume(sb, timeout); {
	case err == nil:
		writeJSON(w, http.StatusCreated, s.describe(sb, true))
		return
	case err != errNotPaused:
		apiError(w, http.StatusInternalServerError, "%v", err)
		return
	}
	if req.Timeout != nil {
		sb.mu.Lock()
		later := time.Now().Add(time.Duration(*req.Timeout) * time.Second).After(sb.endAt)
		sb.mu.Unlock()
		if later {
			s.setDeadline(sb, time.Duration(*req.Timeout)*time.Second)
		}
	}
	writeJSON(w, http.StatusOK, s.describe(sb, true))
}

// listSandboxes answers GET /v2/sandboxes (and v1's GET /sandboxes):
// the running sandboxes whose metadata hold every pair the metadata
// query names, in pages of limit with an x-next-token to the next.
func (s *Server) listSandboxes(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	want, err := metadataFilter(q.Get("metadata"))
	if err != nil {
		apiError(w, http.StatusBadRequest, "metadata: %v", err)
		return
	}
	states := map[string]bool{"running": true, "paused": true}
	if q.Get("state") != "" {
		states = map[string]bool{}
		for _, st := range strings.Split(q.Get("state"), ",") {
			if st != "running" && st != "paused" {
				apiError(w, http.StatusBadRequest, "state %q: running or paused", st)
				return
			}
			states[st] = true
		}
	}
	limit := 100
	if l := q.Get("limit"); l != "" {
		n, err := strconv.Atoi(l)
		if err != nil || n < 1 || n > 1000 {
			apiError(w, http.StatusBadRequest, "limit %q: 1 to 1000", l)
			return
		}
		limit = n
	}
	offset := 0
	if t := q.Get("nextToken"); t != "" {
		n, err := strconv.Atoi(t)
		if err != nil || n < 0 {
			apiError(w, http.StatusBadRequest, "nextToken %q is not one this server gave", t)
			return
		}
		offset = n
	}
	template := q.Get("template")
	var found []sandboxJSON
	for _, sb := range s.sandboxes.list() {
		if template != "" && sb.templateID != template {
			continue
		}
		if j := s.describe(sb, false); states[j.State] && matches(sb.metadata, want) {
			found = append(found, j)
		}
	}
	if q.Get("order") == "desc" {
		for i, j := 0, len(found)-1; i < j; i, j = i+1, j-1 {
			found[i], found[j] = found[j], found[i]
		}
	}
	page := []sandboxJSON{}
	if offset < len(found) {
		page = found[offset:min(len(found), offset+limit)]
	}
	if offset+limit < len(found) {
		w.Header().Set("X-Next-Token", strconv.Itoa(offset+limit))
	}
	writeJSON(w, http.StatusOK, page)
}

// metadataFilter reads the metadata query: key=value pairs joined as a
// query string, whose keys and values the SDKs percent-encode once more.
func metadataFilter(raw string) (map[string]string, error) {
	if raw == "" {
		return nil, nil
	}
	pairs, err := url.ParseQuery(raw)
	if err != nil {
		return nil, err
	}
	want := make(map[string]string, len(pairs))
	for k, vs := range pairs {
		key, err := url.QueryUnescape(k)
		if err != nil {
			return nil, err
		}
		value, err := url.QueryUnescape(vs[len(vs)-1])
		if err != nil {
			return nil, err
		}
		want[key] = value
	}
	return want, nil
}

func matches(have, want map[string]string) bool {
	for k, v := range want {
		if got, ok := have[k]; !ok || got != v {
			return false
		}
	}
	return true
}
