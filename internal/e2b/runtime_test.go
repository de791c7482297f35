package e2b

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/moat-sandbox/moat/internal/state"
)

func TestAKilledSandboxIsNeverDialledThroughItsOldDescriptor(t *testing.T) {
	rt, err := newRuntime("/nonexistent/moat", nil, t.TempDir(), DefaultLimits)
	if err != nil {
		t.Fatal(err)
	}
	dir, err := os.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	inst := &instance{id: "gone", dir: dir}
	rt.destroy(inst) // moat itself is missing: only the bookkeeping runs
	// Another sandbox's directory takes the lowest free descriptor: the
	// old one's number, which a dial through it would reach.
	otherDir := t.TempDir()
	l, err := net.Listen("unix", filepath.Join(otherDir, state.ControlSocketName))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	other, err := os.Open(otherDir)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	conn, err := inst.dial()
	if err == nil {
		conn.Close()
		t.Fatal("a killed sandbox's dial reached a control socket")
	}
	if !strings.Contains(err.Error(), "gone") {
		t.Errorf("got %v, want an error saying the sandbox is gone", err)
	}
}
