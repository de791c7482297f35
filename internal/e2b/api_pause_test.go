package e2b

import (
	"testing"
	"time"

	"github.com/moat-sandbox/moat/internal/control"
)

// A sandbox made with autoPause is paused, not killed, when its timeout
// passes: it stays listed, paused, and its sentry was told to freeze; a
// second pause and a resume of a running sandbox change nothing (E2B's
// 409s); resume thaws it and starts its timeout again.
func TestAutoPausePausesAtTheTimeoutAndResumeRunsItOn(t *testing.T) {
	sb, f := newFakeSandbox(t)
	s := &Server{cfg: Config{Log: func(string, ...any) {}}, sandboxes: registry{m: map[string]*sandbox{}}, metrics: newMetrics()}
	s.sandboxes.add(sb)
	sb.autoPause = true
	s.setDeadline(sb, 10*time.Millisecond)
	for deadline := time.Now().Add(5 * time.Second); s.describe(sb, false).State != "paused"; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the sandbox was not paused at its timeout")
		}
	}
	if s.sandboxes.get(sb.id) == nil {
		t.Fatal("the paused sandbox is no longer listed")
	}
	if err := s.pause(sb, "again"); err != errAlreadyPaused {
		t.Errorf("pausing a paused sandbox: %v, want errAlreadyPaused", err)
	}
	if err := s.resume(sb, time.Minute); err != nil {
		t.Fatalf("resume: %v", err)
	}
	if st := s.describe(sb, false).State; st != "running" {
		t.Errorf("after resume the state is %q", st)
	}
	if err := s.resume(sb, time.Minute); err != errNotPaused {
		t.Errorf("resuming a running sandbox: %v, want errNotPaused", err)
	}
	var ops []string
	for _, r := range f.seen() {
		ops = append(ops, r.Op)
	}
	if want := []string{control.OpPause, control.OpResume}; len(ops) != 2 || ops[0] != want[0] || ops[1] != want[1] {
		t.Errorf("the sentry was asked %v, want %v", ops, want)
	}
	sb.mu.Lock()
	sb.timer.Stop()
	sb.mu.Unlock()
}
