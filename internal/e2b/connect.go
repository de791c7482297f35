package e2b

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// This file is the part of the Connect protocol (connectrpc.com/docs/protocol)
// that E2B's SDKs use against envd: unary calls and server-streaming calls,
// JSON codec, no compression. A unary request is a POST of one JSON message
// (application/json) answered by one; a streaming request is a POST of one
// enveloped message (application/connect+json) answered by enveloped
// messages and an end-of-stream envelope that carries the error, if any.

// rpcError is a Connect error: a code from the protocol's list and a
// message.
type rpcError struct {
	Code    string `json:"code"`
	Message string `json:"message,omitempty"`
	// errno is a failed file operation's (file_errors.go), which /files
	// answers with a status of its own.
	errno syscall.Errno
}

func (e *rpcError) Error() string { return e.Code + ": " + e.Message }

// Connect's error codes that this server answers with.
const (
	codeCanceled           = "canceled"
	codeInvalidArgument    = "invalid_argument"
	codeDeadlineExceeded   = "deadline_exceeded"
	codeNotFound           = "not_found"
	codeAlreadyExists      = "already_exists"
	codePermissionDenied   = "permission_denied"
	codeFailedPrecondition = "failed_precondition"
	codeUnimplemented      = "unimplemented"
	codeInternal           = "internal"
	codeUnavailable        = "unavailable"
	codeUnauthenticated    = "unauthenticated"
)

func rpcErrorf(code, format string, args ...any) *rpcError {
	return &rpcError{Code: code, Message: fmt.Sprintf(format, args...)}
}

// asRPCError makes any error a Connect error: internal unless it is one.
func asRPCError(err error) *rpcError {
	var re *rpcError
	if errors.As(err, &re) {
		return re
	}
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return &rpcError{Code: codeDeadlineExceeded, Message: err.Error()}
	case errors.Is(err, context.Canceled):
		return &rpcError{Code: codeCanceled, Message: err.Error()}
	}
	return &rpcError{Code: codeInternal, Message: err.Error()}
}

// rpcStatus is the HTTP status of a unary error, as the protocol maps
// codes onto statuses.
func rpcStatus(code string) int {
	switch code {
	case codeCanceled:
		return 499
	case codeInvalidArgument, codeFailedPrecondition:
		return http.StatusBadRequest
	case codeDeadlineExceeded:
		return http.StatusGatewayTimeout
	case codeNotFound:
		return http.StatusNotFound
	case codeAlreadyExists:
		return http.StatusConflict
	case codePermissionDenied:
		return http.StatusForbidden
	case codeUnimplemented:
		return http.StatusNotImplemented
	case codeUnavailable:
		return http.StatusServiceUnavailable
	case codeUnauthenticated:
		return http.StatusUnauthorized
	}
	return http.StatusInternalServerError
}

// maxMessage bounds one request message: envd's requests are small (file
// data goes through /files, not RPC).
const maxMessage = 4 << 20

// Envelope flags.
const (
	flagCompressed = 0x01
	flagEndStream  = 0x02
)

// rpcContext is the request's context with the deadline the client set
// in Connect-Timeout-Ms, if any.
func rpcContext(r *http.Request) (context.Context, context.CancelFunc, error) {
	v := r.Header.Get("Connect-Timeout-Ms")
	if v == "" {
		ctx, cancel := context.WithCancel(r.Context())
		return ctx, cancel, nil
	}
	ms, err := strconv.ParseInt(v, 10, 64)
	if err != nil || ms < 0 || len(v) > 10 {
		return nil, nil, rpcErrorf(codeInvalidArgument, "Connect-Timeout-Ms %q: not a timeout", v)
	}
	ctx, cancel := context.WithTimeout(r.Context(), time.Duration(ms)*time.Millisecond)
	return ctx, cancel, nil
}

// mediaType is the request's Content-Type without its parameters.
func mediaType(r *http.Request) string {
	t, _, _ := strings.Cut(r.Header.Get("Content-Type"), ";")
	return strings.TrimSpace(strings.ToLower(t))
}

// serveUnary answers a unary call with fn.
func serveUnary[Req, Resp any](w http.ResponseWriter, r *http.Request, fn func(context.Context, *Req) (*Resp, error)) {
	fail := func(e *rpcError) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(rpcStatus(e.Code))
		json.NewEncoder(w).Encode(e)
	}
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "a Connect call is a POST", http.StatusMethodNotAllowed)
		return
	}
	if mediaType(r) != "application/json" {
		http.Error(w, "this server speaks Connect's JSON codec only (application/json)", http.StatusUnsupportedMediaType)
		return
	}
	if enc := r.Header.Get("Content-Encoding"); enc != "" && enc != "identity" {
		fail(rpcErrorf(codeUnimplemented, "request compressed with %q: this server takes no compression", enc))
		return
	}
	ctx, cancel, err := rpcContext(r)
	if err != nil {
		fail(asRPCError(err))
		return
	}
	defer cancel()
	body, err := io.ReadAll(io.LimitReader(r.Body, maxMessage+1))
	if err != nil {
		fail(rpcErrorf(codeInvalidArgument, "reading the request: %v", err))
		return
	}
	if len(body) > maxMessage {
		fail(rpcErrorf(codeInvalidArgument, "request larger than %d bytes", maxMessage))
		return
	}
	var req Req
	if len(bytes.TrimSpace(body)) > 0 {
		if err := json.Unmarshal(body, &req); err != nil {
			fail(rpcErrorf(codeInvalidArgument, "request: %v", err))
			return
		}
	}
	resp, err := fn(ctx, &req)
	if err != nil {
		fail(asRPCError(err))
		return
	}
	data, err := json.Marshal(resp)
	if err != nil {
		fail(asRPCError(err))
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(data)))
	w.Write(data)
}

// stream is the response side of a server-streaming call.
type stream struct {
	mu    sync.Mutex
	w     http.ResponseWriter
	flush http.Flusher
	err   error // the first failed write: the client is gone
}

// Send writes msg as one enveloped message and flushes it to the client.
func (s *stream) Send(msg any) error {
	data, err := json.Marshal(msg)
	if err != nil {
		return err
	}
	return s.write(0, data)
}

func (s *stream) write(flags byte, data []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		return s.err
	}
	var prefix [5]byte
	prefix[0] = flags
	binary.BigEndian.PutUint32(prefix[1:], uint32(len(data)))
	if _, err := s.w.Write(prefix[:]); err != nil {
		s.err = err
		return err
	}
	if _, err := s.w.Write(data); err != nil {
		s.err = err
		return err
	}
	s.flush.Flush()
	return nil
}

// end writes the end-of-stream message, with err's code and message if
// err is not nil.
func (s *stream) end(err error) {
	var msg struct {
		Error *rpcError `json:"error,omitempty"`
	}
	if err != nil {
		msg.Error = asRPCError(err)
	}
	data, _ := json.Marshal(msg)
	s.write(flagEndStream, data)
}

// serveStream answers a server-streaming call with fn, which sends its
// messages on the stream; its error ends the stream.
func serveStream[Req any](w http.ResponseWriter, r *http.Request, fn func(context.Context, *Req, *stream) error) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "a Connect call is a POST", http.StatusMethodNotAllowed)
		return
	}
	if mediaType(r) != "application/connect+json" {
		http.Error(w, "this server speaks Connect's JSON codec only (application/connect+json)", http.StatusUnsupportedMediaType)
		return
	}
	flusher, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "streaming unsupported", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/connect+json")
	s := &stream{w: w, flush: flusher}
	ctx, cancel, err := rpcContext(r)
	if err != nil {
		w.WriteHeader(http.StatusOK)
		s.end(err)
		return
	}
	defer cancel()
	req, err := readEnvelope[Req](r.Body)
	if err != nil {
		w.WriteHeader(http.StatusOK)
		s.end(err)
		return
	}
	w.WriteHeader(http.StatusOK)
	flusher.Flush()
	s.end(fn(ctx, req, s))
}

// readEnvelope reads the one enveloped message of a streaming request.
func readEnvelope[Req any](body io.Reader) (*Req, error) {
	var prefix [5]byte
	if _, err := io.ReadFull(body, prefix[:]); err != nil {
		return nil, rpcErrorf(codeInvalidArgument, "reading the request's envelope: %v", err)
	}
	if prefix[0]&flagCompressed != 0 {
		return nil, rpcErrorf(codeUnimplemented, "compressed request: this server takes no compression")
	}
	n := binary.BigEndian.Uint32(prefix[1:])
	if n > maxMessage {
		return nil, rpcErrorf(codeInvalidArgument, "request larger than %d bytes", maxMessage)
	}
	data := make([]byte, n)
	if _, err := io.ReadFull(body, data); err != nil {
		return nil, rpcErrorf(codeInvalidArgument, "reading the request: %v", err)
	}
	var req Req
	if len(bytes.TrimSpace(data)) > 0 {
		if err := json.Unmarshal(data, &req); err != nil {
			return nil, rpcErrorf(codeInvalidArgument, "request: %v", err)
		}
	}
	return &req, nil
}
