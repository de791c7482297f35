package e2b

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/moat-sandbox/moat/internal/control"
	"github.com/moat-sandbox/moat/internal/usernet"
	"github.com/moat-sandbox/moat/sentry/net/netstack"
)

// newTestServer is a server whose moat is never run: the requests these
// tests make fail before any sandbox would be made.
func newTestServer(t *testing.T) *Server {
	t.Helper()
	s, err := New(Config{APIKey: "the-key", StateDir: filepath.Join(t.TempDir(), "state"),
		Templates: map[string]string{"base": t.TempDir()}, Moat: "/nonexistent/moat"})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func call(t *testing.T, s *Server, method, path, key, body string) (int, map[string]any) {
	t.Helper()
	r := httptest.NewRequest(method, path, strings.NewReader(body))
	if key != "" {
		r.Header.Set("X-API-Key", key)
	}
	w := httptest.NewRecorder()
	s.Handler().ServeHTTP(w, r)
	var got map[string]any
	json.Unmarshal(w.Body.Bytes(), &got)
	return w.Code, got
}

func TestControlPlaneRefusesAWrongOrMissingAPIKeyWith401(t *testing.T) {
	s := newTestServer(t)
	for _, key := range []string{"", "the-ke", "the-key2"} {
		code, body := call(t, s, "GET", "/v2/sandboxes", key, "")
		if code != 401 || body["code"] != float64(401) || body["message"] == "" {
			t.Errorf("key %q: got %d %v", key, code, body)
		}
	}
	if code, _ := call(t, s, "GET", "/v2/sandboxes", "the-key", ""); code != 200 {
		t.Errorf("the right key: got %d", code)
	}
}

func TestBadCreateRequestsGetE2BsErrorWithTheirStatus(t *testing.T) {
	s := newTestServer(t)
	for _, c := range []struct {
		body   string
		status int
		says   string
	}{
		{`{"templateID":`, 400, "request body"},
		{`{"timeout":10}`, 400, "templateID"},
		{`{"templateID":"base","timeout":-1}`, 400, "out of range"},
		{`{"templateID":"base","timeout":86401}`, 400, "out of range"},
		{`{"templateID":"nosuch"}`, 404, `"nosuch" not found`},
		{`{"templateID":"base","allow_internet_access":true,"network":{"denyOut":["8.8.8.8"]}}`, 400, "network.denyOut: moat's egress is an allowlist"},
		{`{"templateID":"base","network":{"allowOut":["bad name!"]}}`, 400, `network.allowOut: "bad name!"`},
		{`{"templateID":"base","network":{"rules":{}}}`, 400, "network"},
	} {
		code, body := call(t, s, "POST", "/v2/sandboxes", "the-key", c.body)
		msg, _ := body["message"].(string)
		if code != c.status || body["code"] != float64(c.status) || !strings.Contains(msg, c.says) {
			t.Errorf("%s: got %d %v, want %d saying %q", c.body, code, body, c.status, c.says)
		}
	}
	if left := s.sandboxes.list(); len(left) != 0 {
		t.Errorf("bad requests left %d sandboxes", len(left))
	}
}

func TestRequestsForAnUnknownSandboxGet404(t *testing.T) {
	s := newTestServer(t)
	for _, c := range [][3]string{
		{"GET", "/sandboxes/nosuch", ""},
		{"DELETE", "/sandboxes/nosuch", ""},
		{"POST", "/sandboxes/nosuch/timeout", `{"timeout":30}`},
		{"POST", "/v2/sandboxes/nosuch/connect", `{"timeout":30}`},
		{"POST", "/sandboxes/nosuch/pause", ""},
		{"PUT", "/sandboxes/nosuch/network", `{"allowOut":["1.1.1.1"]}`},
	} {
		code, body := call(t, s, c[0], c[1], "the-key", c[2])
		if code != 404 || body["code"] != float64(404) {
			t.Errorf("%s %s: got %d %v", c[0], c[1], code, body)
		}
	}
}

func TestEnvdRequestsForAnUnknownSandboxGet502AsFromE2BsProxy(t *testing.T) {
	s := newTestServer(t)
	r := httptest.NewRequest("GET", "/health", nil)
	r.Header.Set("E2b-Sandbox-Id", "nosuch")
	w := httptest.NewRecorder()
	s.Handler().ServeHTTP(w, r)
	if w.Code != http.StatusBadGateway {
		t.Errorf("got %d, want 502", w.Code)
	}
}

func TestEnvdRequestsNeedTheSandboxsAccessToken(t *testing.T) {
	s := newTestServer(t)
	s.sandboxes.add(&sandbox{id: "sb1", token: "tok1", procs: map[uint32]*process{}})
	s.sandboxes.add(&sandbox{id: "sb2", token: "tok2", procs: map[uint32]*process{}})
	for _, c := range []struct {
		id, token string
		status    int
	}{{"sb1", "", 401}, {"sb1", "tok2", 401}, {"sb2", "tok1", 401}, {"sb1", "tok1", 200}} {
		r := httptest.NewRequest("POST", "/process.Process/List", strings.NewReader("{}"))
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set("E2b-Sandbox-Id", c.id)
		if c.token != "" {
			r.Header.Set("X-Access-Token", c.token)
		}
		w := httptest.NewRecorder()
		s.Handler().ServeHTTP(w, r)
		if w.Code != c.status {
			t.Errorf("sandbox %s with token %q: got %d %s, want %d", c.id, c.token, w.Code, w.Body.String(), c.status)
		}
	}
}

func TestHostNamesASandboxWhenADomainIsSet(t *testing.T) {
	s := newTestServer(t)
	s.cfg.Domain = "sandbox.test"
	for host, want := range map[string]string{
		"49983-abc.sandbox.test":      "abc",
		"49983-abc.sandbox.test:3000": "abc",
		"api.sandbox.test":            "",
		"49983-abc.other.test":        "",
		"abc.sandbox.test":            "",
	} {
		r := httptest.NewRequest("GET", "/health", nil)
		r.Host = host
		id, port, ok := s.route(r)
		if want == "" && ok || want != "" && (id != want || port != envdPort) {
			t.Errorf("%s: got %q %d %v, want %q", host, id, port, ok, want)
		}
	}
}

func TestMetadataFilterUndoesTheSDKsDoubleEncoding(t *testing.T) {
	// The SDK percent-encodes each key and value, joins them as a query
	// string, which the HTTP client encodes once more as one parameter.
	got, err := metadataFilter("user%3Aid=a%2Fb&plain=x")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got["user:id"] != "a/b" || got["plain"] != "x" {
		t.Errorf("got %v", got)
	}
	if !matches(map[string]string{"user:id": "a/b", "plain": "x", "more": "y"}, got) {
		t.Error("a sandbox with every pair and more does not match")
	}
	if matches(map[string]string{"user:id": "a/b"}, got) {
		t.Error("a sandbox without every pair matches")
	}
}

func TestBadTimeoutRequestsGetE2BsErrorAndLeaveTheDeadlineAlone(t *testing.T) {
	s := newTestServer(t)
	sb := &sandbox{id: "sb1", token: "tok1", procs: map[uint32]*process{}}
	s.sandboxes.add(sb)
	for _, c := range []struct {
		path, body string
		says       string
	}{
		{"/sandboxes/sb1/timeout", `{"timeout":`, "request body"},
		{"/sandboxes/sb1/timeout", `{}`, "timeout is required"},
		{"/sandboxes/sb1/timeout", `{"timeout":-1}`, "out of range"},
		{"/sandboxes/sb1/timeout", `{"timeout":86401}`, "out of range"},
		{"/v2/sandboxes/sb1/connect", `{"timeout":86401}`, "out of range"},
		{"/v2/sandboxes/sb1/connect", `[1,2]`, "request body"},
	} {
		code, body := call(t, s, "POST", c.path, "the-key", c.body)
		msg, _ := body["message"].(string)
		if code != 400 || body["code"] != float64(400) || !strings.Contains(msg, c.says) {
			t.Errorf("%s %s: got %d %v, want 400 saying %q", c.path, c.body, code, body, c.says)
		}
	}
	if !sb.endAt.IsZero() || sb.timer != nil {
		t.Errorf("a refused request set the sandbox's deadline to %v", sb.endAt)
	}
}

func TestACreateWhoseBootFailsGets500AndLeavesNothingBehind(t *testing.T) {
	moat := filepath.Join(t.TempDir(), "moat")
	if err := os.WriteFile(moat, []byte("#!/bin/sh\necho 'moat: cannot boot' >&2\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	state := filepath.Join(t.TempDir(), "state")
	s, err := New(Config{APIKey: "the-key", StateDir: state, Templates: map[string]string{"base": t.TempDir()}, Moat: moat})
	if err != nil {
		t.Fatal(err)
	}
	code, body := call(t, s, "POST", "/v2/sandboxes", "the-key", `{"templateID":"base"}`)
	msg, _ := body["message"].(string)
	if code != 500 || body["code"] != float64(500) || !strings.Contains(msg, "creating the sandbox") {
		t.Errorf("got %d %v, want 500 in E2B's shape", code, body)
	}
	if left := s.sandboxes.list(); len(left) != 0 {
		t.Errorf("a failed create registered %d sandboxes", len(left))
	}
	for _, dir := range []string{"bundles", "run"} {
		entries, err := os.ReadDir(filepath.Join(state, dir))
		if err != nil || len(entries) != 0 {
			t.Errorf("%s after a failed create: %v %v, want it empty", dir, entries, err)
		}
	}
	var out strings.Builder
	s.metrics.write(&out, 0, nil, 0)
	if !strings.Contains(out.String(), `moat_serve_creates_total{outcome="error"} 1`) {
		t.Errorf("the failed create is not counted as one:\n%s", out.String())
	}
}

func TestE2BNetworksMapOntoMoatsEgress(t *testing.T) {
	yes, no := true, false
	all, none := egress{user: true}, egress{}
	allow := func(entries ...string) egress { return egress{user: true, allow: entries} }
	for _, c := range []struct {
		internet *bool
		network  string
		want     egress
	}{
		// Without allow_internet_access: moat's default, deny all.
		{nil, ``, none},
		{nil, `null`, none},
		{nil, `{}`, none},
		{nil, `{"allowOut":[],"denyOut":[]}`, none},
		{nil, `{"allowPublicTraffic":false}`, none},
		{nil, `{"denyOut":["0.0.0.0/0"]}`, none},
		{nil, `{"denyOut":["10.0.0.0/8"]}`, none}, // denies what is denied already
		{nil, `{"allowOut":["1.1.1.1"]}`, allow("1.1.1.1")},
		// allow_internet_access false is denyOut 0.0.0.0/0; allowOut wins over it.
		{&no, ``, none},
		{&no, `{"allowOut":["allowed.test","10.1.2.0/24"]}`, allow("allowed.test", "10.1.2.0/24")},
		// allow_internet_access true: all, unless denyOut denies all.
		{&yes, ``, all},
		{&yes, `{"allowOut":["1.1.1.1"]}`, all}, // allowed already
		{&yes, `{"denyOut":["0.0.0.0/0"]}`, none},
		{&yes, `{"denyOut":["0.0.0.0/0"],"allowOut":["*.pypi.org","1.1.1.1:443"]}`, allow("*.pypi.org", "1.1.1.1:443")},
		// allowOut 0.0.0.0/0 (the SDKs' ALL_TRAFFIC) is all, whatever is denied.
		{&no, `{"allowOut":["0.0.0.0/0"]}`, all},
		{&yes, `{"denyOut":["8.8.8.8"],"allowOut":["0.0.0.0/0"]}`, all},
	} {
		got, problem := sandboxEgress(c.internet, json.RawMessage(c.network))
		if problem != "" || got.user != c.want.user || strings.Join(got.allow, ",") != strings.Join(c.want.allow, ",") ||
			(got.allow == nil) != (c.want.allow == nil) {
			t.Errorf("allow_internet_access %v, network %s: %v %q, want %v", c.internet != nil && *c.internet, c.network, got, problem, c.want)
		}
	}
}

// A network update gives the sentry of a sandbox with the user-space
// network the allowlist a create with the same fields would have; one
// with loopback alone cannot be opened (409) but may stay closed (204);
// what moat cannot honour is a 400 naming the field.
func TestANetworkUpdateReplacesTheSandboxsAllowlist(t *testing.T) {
	s := newTestServer(t)
	s.sandboxes.add(&sandbox{id: "closed", token: "tok1", procs: map[uint32]*process{}})
	if code, body := call(t, s, "PUT", "/sandboxes/closed/network", "the-key", `{"allowOut":["1.1.1.1"]}`); code != 409 || body["code"] != float64(409) {
		t.Errorf("opening a loopback-only sandbox: %d %v, want 409 in E2B's shape", code, body)
	}
	if code, body := call(t, s, "PUT", "/sandboxes/closed/network", "the-key", `{"allow_internet_access":false}`); code != 204 {
		t.Errorf("keeping a loopback-only sandbox closed: %d %v, want 204", code, body)
	}
	sb, f := newFakeSandbox(t)
	sb.id, sb.created, sb.procs = "open", egress{user: true}, map[uint32]*process{}
	s.sandboxes.add(sb)
	asked := func(who string, seen []control.Request, body string, want control.Egress) {
		t.Helper()
		if len(seen) == 0 {
			t.Errorf("%s: %s was asked nothing", body, who)
			return
		}
		got := seen[len(seen)-1]
		if got.Op != control.OpEgress || got.Egress == nil || got.Egress.All != want.All || strings.Join(got.Egress.Allow, ",") != strings.Join(want.Allow, ",") {
			t.Errorf("%s: %s was asked %+v %+v, want %+v", body, who, got, got.Egress, want)
		}
	}
	for _, c := range []struct {
		body          string
		usernet, want control.Egress
	}{
		// The sentry's list names the user-space network's resolver too.
		{`{"denyOut":["0.0.0.0/0"],"allowOut":["pypi.org","1.1.1.1:443"]}`,
			control.Egress{Allow: []string{"pypi.org", "1.1.1.1:443"}}, control.Egress{Allow: []string{"pypi.org", "1.1.1.1:443", "10.0.2.3:53"}}},
		{`{"allow_internet_access":false}`, control.Egress{}, control.Egress{}},
		{`{"allow_internet_access":true}`, control.Egress{All: true}, control.Egress{All: true}},
	} {
		if code, body := call(t, s, "PUT", "/sandboxes/open/network", "the-key", c.body); code != 204 {
			t.Errorf("%s: %d %v, want 204", c.body, code, body)
			continue
		}
		asked("moat usernet", f.usernetSeen(), c.body, c.usernet)
		asked("the sentry", f.seen(), c.body, c.want)
	}
	if !sb.allowlisted.Load() {
		t.Error("a sandbox given an allowlist is not counted as allowlisted")
	}
	if code, body := call(t, s, "PUT", "/sandboxes/open/network", "the-key", `{"rules":{"x.test":[{"transform":{}}]}}`); code != 400 || !strings.Contains(body["message"].(string), "rules") {
		t.Errorf("rules: %d %v, want 400 naming rules", code, body)
	}
	// Created with an allowlist: moat usernet takes the new one too, so
	// an update may go past the create's.
	sb.created = egress{user: true, allow: []string{"pypi.org", "1.1.1.1:443"}}
	for _, c := range []struct {
		body    string
		usernet control.Egress
	}{
		{`{"allowOut":["pypi.org"]}`, control.Egress{Allow: []string{"pypi.org"}}},
		{`{"allowOut":["pypi.org","other.test"]}`, control.Egress{Allow: []string{"pypi.org", "other.test"}}},
		{`{"allow_internet_access":true}`, control.Egress{All: true}},
	} {
		if code, body := call(t, s, "PUT", "/sandboxes/open/network", "the-key", c.body); code != 204 {
			t.Errorf("%s: %d %v, want 204", c.body, code, body)
		}
		asked("moat usernet", f.usernetSeen(), c.body, c.usernet)
	}
}

func TestE2BNetworksMoatCannotHonourAreRefusedNamingTheField(t *testing.T) {
	yes := true
	for _, c := range []struct {
		internet *bool
		network  string
		says     string
	}{
		{&yes, `{"denyOut":["8.8.8.8"]}`, "network.denyOut: moat's egress is an allowlist: it cannot deny 8.8.8.8"},
		{nil, `{"denyOut":["example.com"]}`, `network.denyOut: "example.com" is not an IP address or CIDR`},
		{nil, `{"allowOut":["bad name!"]}`, `network.allowOut: "bad name!": not a domain name`},
		{nil, `{"allowOut":[""]}`, "network.allowOut: an empty entry"},
		{nil, `{"allowOut":["1.1.1.1:99999"]}`, `network.allowOut: "1.1.1.1:99999"`},
		{nil, `{"egressProxy":{"address":"p:1"}}`, `unknown field "egressProxy"`}, // refused, not ignored
		{nil, `{"rules":{}}`, `unknown field "rules"`},
		{nil, `[1]`, "network: "},
	} {
		if _, problem := sandboxEgress(c.internet, json.RawMessage(c.network)); !strings.Contains(problem, c.says) || strings.Contains(problem, "\n") {
			t.Errorf("%s: %q, want one line with %q", c.network, problem, c.says)
		}
	}
}

func TestSandboxSpecGivesANetworkItsAnnotationsAndResolver(t *testing.T) {
	if s := sandboxSpec("/r", "id", "/b", egress{}, DefaultLimits); s.Annotations[usernet.Annotation] != "" || hasMount(s, "/etc/resolv.conf") {
		t.Errorf("loopback only, yet %v and mounts %v", s.Annotations, s.Mounts)
	}
	s := sandboxSpec("/r", "id", "/b", egress{user: true, allow: []string{"a.test", "10.0.0.1:80"}}, DefaultLimits)
	if s.Annotations[usernet.Annotation] != usernet.AnnotationUser || s.Annotations[netstack.EgressAnnotation] != "a.test,10.0.0.1:80" {
		t.Errorf("annotations %v", s.Annotations)
	}
	if !hasMount(s, "/etc/resolv.conf") {
		t.Errorf("no resolv.conf mount: %v", s.Mounts)
	}
	s = sandboxSpec("/r", "id", "/b", egress{user: true}, DefaultLimits)
	if _, ok := s.Annotations[netstack.EgressAnnotation]; ok || s.Annotations[usernet.Annotation] != usernet.AnnotationUser {
		t.Errorf("all of the network, yet annotations %v", s.Annotations)
	}
}

func hasMount(s *specs.Spec, dest string) bool {
	for _, m := range s.Mounts {
		if m.Destination == dest {
			return true
		}
	}
	return false
}
