package e2b

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/moat-sandbox/moat/internal/control"
)

// Pausing: every guest thread of a paused sandbox stops where it is (the
// sentry's freeze, as `moat pause` does), and the sandbox is kept whole,
// its memory with it, until a resume or a connect runs it on or a DELETE
// kills it. Its timeout does not run while it is paused, as E2B keeps a
// paused sandbox; it starts again at the resume. The sandbox stays in
// the host's memory: nothing is written out (E2B's pause without
// keepMemory reboots the sandbox at resume; here it always resumes where
// it stopped).

// errAlreadyPaused and errNotPaused are the transitions that do nothing:
// E2B answers 409 for both.
var (
	errAlreadyPaused = fmt.Errorf("the sandbox is already paused")
	errNotPaused     = fmt.Errorf("the sandbox is not paused")
)

// pause freezes sb and stops its timeout.
func (s *Server) pause(sb *sandbox, why string) error {
	sb.transition.Lock()
	defer sb.transition.Unlock()
	sb.mu.Lock()
	paused, dead := sb.paused, sb.dead
	sb.mu.Unlock()
	switch {
	case dead:
		return fmt.Errorf("sandbox %s is gone", sb.id)
	case paused:
		return errAlreadyPaused
	}
	if _, err := sb.inst.call(context.Background(), control.Request{Op: control.OpPause}); err != nil {
		return fmt.Errorf("pause sandbox %s: %w", sb.id, err)
	}
	sb.mu.Lock()
	sb.paused = true
	if sb.timer != nil {
		sb.timer.Stop()
	}
	sb.mu.Unlock()
	s.cfg.Log("sandbox %s: paused (%s)", sb.id, why)
	return nil
}

// resume thaws sb and gives it timeout to run.
func (s *Server) resume(sb *sandbox, timeout time.Duration) error {
	sb.transition.Lock()
	defer sb.transition.Unlock()
	sb.mu.Lock()
	paused := sb.paused
	sb.mu.Unlock()
	if !paused {
		return errNotPaused
	}
	if _, err := sb.inst.call(context.Background(), control.Request{Op: control.OpResume}); err != nil {
		return fmt.Errorf("resume sandbox %s: %w", sb.id, err)
	}
	sb.mu.Lock()
	sb.paused = false
	sb.mu.Unlock()
	s.setDeadline(sb, timeout)
	s.cfg.Log("sandbox %s: resumed for %v", sb.id, timeout)
	return nil
}

// expire is what sb's timeout does: pause it if it was created with
// autoPause, else kill it.
func (s *Server) expire(sb *sandbox) {
	sb.mu.Lock()
	autoPause := sb.autoPause
	sb.mu.Unlock()
	if autoPause {
		if err := s.pause(sb, "its timeout passed, autoPause"); err == nil || err == errAlreadyPaused {
			return
		}
	}
	s.kill(sb.id, "its timeout passed")
}

// pauseRequest is POST /sandboxes/{id}/pause's body: memory is the SDKs'
// keepMemory, which a pause here always does.
type pauseRequest struct {
	Memory *bool `json:"memory"`
}

// pauseSandbox answers POST /sandboxes/{id}/pause: 204, or 409 for a
// sandbox already paused.
func (s *Server) pauseSandbox(w http.ResponseWriter, r *http.Request) {
	var req pauseRequest
	if err := decodeBody(r, &req); err != nil {
		apiError(w, http.StatusBadRequest, "request body: %v", err)
		return
	}
	sb := s.pathSandbox(w, r)
	if sb == nil {
		return
	}
	switch err := s.pause(sb, "pause"); {
	case err == errAlreadyPaused:
		apiError(w, http.StatusConflict, "sandbox %s is already paused", sb.id)
	case err != nil:
		apiError(w, http.StatusInternalServerError, "%v", err)
	default:
		w.WriteHeader(http.StatusNoContent)
	}
}

// resumeRequest is POST /sandboxes/{id}/resume's body (E2B's v1 resume,
// which the SDKs replaced with connect).
type resumeRequest struct {
	Timeout   *int64 `json:"timeout"`
	AutoPause *bool  `json:"autoPause"`
}

// resumeSandbox answers POST /sandboxes/{id}/resume: 201 with the
// sandbox, or 409 for one that is not paused.
func (s *Server) resumeSandbox(w http.ResponseWriter, r *http.Request) {
	var req resumeRequest
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
	if req.AutoPause != nil {
		sb.mu.Lock()
		sb.autoPause = *req.AutoPause
		sb.mu.Unlock()
	}
	switch err := s.resume(sb, timeout); {
	case err == errNotPaused:
		apiError(w, http.StatusConflict, "sandbox %s is not paused", sb.id)
	case err != nil:
		apiError(w, http.StatusInternalServerError, "%v", err)
	default:
		writeJSON(w, http.StatusCreated, s.describe(sb, true))
	}
}
