package e2b

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

type echoRequest struct {
	Text string `json:"text"`
}

type echoResponse struct {
	Text string `json:"text"`
}

func envelope(flags byte, payload string) []byte {
	b := make([]byte, 5+len(payload))
	b[0] = flags
	binary.BigEndian.PutUint32(b[1:], uint32(len(payload)))
	copy(b[5:], payload)
	return b
}

// readEnvelopes splits a streaming response into its messages.
func readEnvelopes(t *testing.T, body io.Reader) (flags []byte, payloads []string) {
	t.Helper()
	for {
		var prefix [5]byte
		if _, err := io.ReadFull(body, prefix[:]); errors.Is(err, io.EOF) {
			return
		} else if err != nil {
			t.Fatalf("reading an envelope: %v", err)
		}
		data := make([]byte, binary.BigEndian.Uint32(prefix[1:]))
		if _, err := io.ReadFull(body, data); err != nil {
			t.Fatalf("reading a message: %v", err)
		}
		flags = append(flags, prefix[0])
		payloads = append(payloads, string(data))
	}
}

func TestUnaryCallAnswersWithTheHandlersMessageAsJSON(t *testing.T) {
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		serveUnary(w, r, func(_ context.Context, req *echoRequest) (*echoResponse, error) {
			return &echoResponse{Text: strings.ToUpper(req.Text)}, nil
		})
	})
	r := httptest.NewRequest("POST", "/svc.S/Echo", strings.NewReader(`{"text":"hi"}`))
	r.Header.Set("Content-Type", "application/json")
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	if w.Code != 200 || w.Header().Get("Content-Type") != "application/json" || strings.TrimSpace(w.Body.String()) != `{"text":"HI"}` {
		t.Errorf("got %d %q %q", w.Code, w.Header().Get("Content-Type"), w.Body.String())
	}
}

func TestUnaryErrorsCarryConnectsCodeAndItsHTTPStatus(t *testing.T) {
	for code, status := range map[string]int{codeNotFound: 404, codeAlreadyExists: 409, codeInvalidArgument: 400,
		codeUnauthenticated: 401, codePermissionDenied: 403, codeUnimplemented: 501, codeInternal: 500} {
		h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			serveUnary(w, r, func(context.Context, *echoRequest) (*echoResponse, error) {
				return nil, rpcErrorf(code, "the reason")
			})
		})
		r := httptest.NewRequest("POST", "/svc.S/Echo", strings.NewReader(`{}`))
		r.Header.Set("Content-Type", "application/json; charset=utf-8")
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		var got rpcError
		json.Unmarshal(w.Body.Bytes(), &got)
		if w.Code != status || got.Code != code || got.Message != "the reason" {
			t.Errorf("%s: got %d %s", code, w.Code, w.Body.String())
		}
	}
}

func TestUnaryCallRefusesAnotherCodec(t *testing.T) {
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		serveUnary(w, r, func(context.Context, *echoRequest) (*echoResponse, error) {
			t.Error("the handler ran for a protobuf request")
			return &echoResponse{}, nil
		})
	})
	r := httptest.NewRequest("POST", "/svc.S/Echo", bytes.NewReader([]byte{0x0a, 0x02, 'h', 'i'}))
	r.Header.Set("Content-Type", "application/proto")
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	if w.Code != http.StatusUnsupportedMediaType {
		t.Errorf("got %d, want 415", w.Code)
	}
}

func TestStreamSendsEnvelopedMessagesThenAnEndOfStream(t *testing.T) {
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		serveStream(w, r, func(_ context.Context, req *echoRequest, s *stream) error {
			s.Send(echoResponse{Text: req.Text + "1"})
			s.Send(echoResponse{Text: req.Text + "2"})
			return nil
		})
	})
	srv := httptest.NewServer(h)
	defer srv.Close()
	resp, err := http.Post(srv.URL+"/svc.S/Stream", "application/connect+json", bytes.NewReader(envelope(0, `{"text":"x"}`)))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	flags, payloads := readEnvelopes(t, resp.Body)
	want := []string{`{"text":"x1"}`, `{"text":"x2"}`, `{}`}
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/connect+json" ||
		!bytes.Equal(flags, []byte{0, 0, flagEndStream}) || strings.Join(payloads, " ") != strings.Join(want, " ") {
		t.Errorf("got %d %q flags %v messages %q", resp.StatusCode, resp.Header.Get("Content-Type"), flags, payloads)
	}
}

func TestStreamErrorTravelsInTheEndOfStreamMessage(t *testing.T) {
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		serveStream(w, r, func(context.Context, *echoRequest, *stream) error {
			return rpcErrorf(codeNotFound, "no such process")
		})
	})
	srv := httptest.NewServer(h)
	defer srv.Close()
	resp, err := http.Post(srv.URL+"/svc.S/Stream", "application/connect+json", bytes.NewReader(envelope(0, `{}`)))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	flags, payloads := readEnvelopes(t, resp.Body)
	if resp.StatusCode != 200 || len(flags) != 1 || flags[0] != flagEndStream ||
		payloads[0] != `{"error":{"code":"not_found","message":"no such process"}}` {
		t.Errorf("got %d flags %v messages %q", resp.StatusCode, flags, payloads)
	}
}

func TestStreamRefusesACompressedRequest(t *testing.T) {
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		serveStream(w, r, func(context.Context, *echoRequest, *stream) error {
			t.Error("the handler ran for a compressed message")
			return nil
		})
	})
	srv := httptest.NewServer(h)
	defer srv.Close()
	resp, err := http.Post(srv.URL+"/svc.S/Stream", "application/connect+json", bytes.NewReader(envelope(flagCompressed, "xx")))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	_, payloads := readEnvelopes(t, resp.Body)
	if len(payloads) != 1 || !strings.Contains(payloads[0], `"code":"unimplemented"`) {
		t.Errorf("got %q", payloads)
	}
}

func TestConnectTimeoutBecomesTheCallsDeadline(t *testing.T) {
	r := httptest.NewRequest("POST", "/svc.S/Echo", nil)
	r.Header.Set("Connect-Timeout-Ms", "60000")
	ctx, cancel, err := rpcContext(r)
	if err != nil {
		t.Fatal(err)
	}
	defer cancel()
	if _, ok := ctx.Deadline(); !ok {
		t.Error("no deadline")
	}
	r.Header.Set("Connect-Timeout-Ms", "-5")
	if _, _, err := rpcContext(r); err == nil {
		t.Error("a negative timeout was taken")
	}
}
