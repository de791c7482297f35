package e2b

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// guestEcho is a server "in the sandbox" that answers with what it was
// sent: the Host, the path and the headers moat serve must not pass on.
func guestEcho(t *testing.T) *httptest.Server {
	t.Helper()
	g := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "host=%s path=%s id=%q port=%q token=%q", r.Host, r.URL.Path,
			r.Header.Get("E2b-Sandbox-Id"), r.Header.Get("E2b-Sandbox-Port"), r.Header.Get(trafficTokenHeader))
	}))
	t.Cleanup(g.Close)
	return g
}

// portGet asks the server for path on port of sandbox "fake", as an SDK
// user's client reaches getHost(port)'s URL, with extra headers.
func portGet(t *testing.T, url string, port int, path string, extra map[string]string) (int, string) {
	t.Helper()
	req, err := http.NewRequest("GET", url+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Host = fmt.Sprintf("%d-fake.moat.test", port)
	req.Header.Set("E2b-Sandbox-Id", "fake")
	req.Header.Set("E2b-Sandbox-Port", fmt.Sprint(port))
	for k, v := range extra {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

func TestAPortOfASandboxIsReachedThroughTheServerWithTheRequestsHost(t *testing.T) {
	s := newTestServer(t)
	sb, f := newFakeSandbox(t)
	s.sandboxes.add(sb)
	f.listen(8000, strings.TrimPrefix(guestEcho(t).URL, "http://"))
	srv := httptest.NewServer(s.Handler())
	defer srv.Close()

	code, body := portGet(t, srv.URL, 8000, "/some/page", nil)
	if want := `host=8000-fake.moat.test path=/some/page id="" port="" token=""`; code != 200 || body != want {
		t.Errorf("port 8000: %d %q, want 200 %q", code, body, want)
	}
	// A second request may reuse the connection; it must work the same.
	if code, _ := portGet(t, srv.URL, 8000, "/again", nil); code != 200 {
		t.Errorf("second request: %d", code)
	}
	if code, body := portGet(t, srv.URL, 8001, "/", nil); code != http.StatusBadGateway || !strings.Contains(body, "connection refused") {
		t.Errorf("port with no listener: %d %q, want 502 saying refused", code, body)
	}
}

func TestAPrivateSandboxsPortsWantItsTrafficTokenAndAMaskedHostIsPassed(t *testing.T) {
	s := newTestServer(t)
	sb, f := newFakeSandbox(t)
	sb.ingress = ingress{token: "tok", hostMask: "localhost:${PORT}"}
	s.sandboxes.add(sb)
	f.listen(3000, strings.TrimPrefix(guestEcho(t).URL, "http://"))
	srv := httptest.NewServer(s.Handler())
	defer srv.Close()

	for _, tok := range []string{"", "to", "tok2"} {
		if code, _ := portGet(t, srv.URL, 3000, "/", map[string]string{trafficTokenHeader: tok}); code != http.StatusForbidden {
			t.Errorf("token %q: %d, want 403", tok, code)
		}
	}
	code, body := portGet(t, srv.URL, 3000, "/x", map[string]string{trafficTokenHeader: "tok"})
	if want := `host=localhost:3000 path=/x id="" port="" token=""`; code != 200 || body != want {
		t.Errorf("with the token: %d %q, want 200 %q", code, body, want)
	}
}

func TestCreatesNetworkSaysWhetherPortsArePublicAndTheirHost(t *testing.T) {
	for _, c := range []struct {
		network   string
		wantToken bool
		mask      string
	}{
		{``, false, ""},
		{`{"allowPublicTraffic":true}`, false, ""},
		{`{"allowPublicTraffic":false}`, true, ""},
		{`{"maskRequestHost":"localhost:${PORT}"}`, false, "localhost:${PORT}"},
	} {
		if _, problem := sandboxEgress(nil, json.RawMessage(c.network)); problem != "" {
			t.Errorf("%s: refused: %s", c.network, problem)
			continue
		}
		n, err := decodeNetwork(json.RawMessage(c.network))
		if err != nil {
			t.Fatal(err)
		}
		in := sandboxIngress(n)
		if (in.token != "") != c.wantToken || in.hostMask != c.mask {
			t.Errorf("%s: %+v, want a token %v and mask %q", c.network, in, c.wantToken, c.mask)
		}
	}
}
