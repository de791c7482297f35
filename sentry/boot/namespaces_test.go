package boot

import (
	"strings"
	"testing"

	specs "github.com/opencontainers/runtime-spec/specs-go"
)

func TestANamespacePathIsRecordedAndOnlyTheNetworkOneJoined(t *testing.T) {
	l := &specs.Linux{Namespaces: []specs.LinuxNamespace{
		{Type: specs.PIDNamespace},
		{Type: specs.NetworkNamespace, Path: "/run/netns/cni-1"},
		{Type: specs.IPCNamespace, Path: "/proc/7/ns/ipc"},
	}}
	var lines []string
	noteNamespaces(l, func(f string, a ...any) { lines = append(lines, f) })
	if len(lines) != 2 || !strings.Contains(lines[0], "network namespace %s joined") || !strings.Contains(lines[1], "not joined") {
		t.Errorf("logged %q, want one line for each namespace with a path", lines)
	}
	got := JoinedNamespaces(l)
	if len(got) != 2 || got[0].Path != "/run/netns/cni-1" || got[1].Type != specs.IPCNamespace {
		t.Errorf("JoinedNamespaces = %+v", got)
	}
	if JoinedNamespaces(nil) != nil {
		t.Error("JoinedNamespaces(nil) is not empty")
	}
}
