package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/moat-sandbox/moat/internal/bundle"
	"github.com/moat-sandbox/moat/internal/state"
)

func TestPodSandboxOf(t *testing.T) {
	for _, tc := range []struct {
		name        string
		annotations map[string]string
		want        string
	}{
		{"none", nil, ""},
		{"containerd's container", map[string]string{"io.kubernetes.cri.container-type": "container", "io.kubernetes.cri.sandbox-id": "abc"}, "abc"},
		{"containerd's sandbox", map[string]string{"io.kubernetes.cri.container-type": "sandbox", "io.kubernetes.cri.sandbox-id": "abc"}, ""},
		{"CRI-O's container", map[string]string{"io.kubernetes.cri-o.ContainerType": "container", "io.kubernetes.cri-o.SandboxID": "def"}, "def"},
		{"CRI-O's sandbox", map[string]string{"io.kubernetes.cri-o.ContainerType": "sandbox", "io.kubernetes.cri-o.SandboxID": "def"}, ""},
		{"a container with no sandbox id", map[string]string{"io.kubernetes.cri.container-type": "container"}, ""},
		{"a sandbox id without a type", map[string]string{"io.kubernetes.cri.sandbox-id": "abc"}, ""},
	} {
		if got := podSandboxOf(tc.annotations); got != tc.want {
			t.Errorf("%s: podSandboxOf = %q, want %q", tc.name, got, tc.want)
		}
	}
}

// saveRecord makes container id under root with the record c, whose
// sentry is this test process when alive (a process that runs).
func saveRecord(t *testing.T, root string, c state.Container, alive bool) {
	t.Helper()
	if alive {
		p, err := state.Identify(os.Getpid())
		if err != nil {
			t.Fatal(err)
		}
		c.Sentry = p
	}
	dir, err := state.Create(root, c.ID)
	if err != nil {
		t.Fatal(err)
	}
	defer dir.Close()
	c.Created = time.Now()
	if err := dir.Save(&c); err != nil {
		t.Fatal(err)
	}
}

func appBundle(sandboxID string) *bundle.Bundle {
	return &bundle.Bundle{Spec: &specs.Spec{Annotations: map[string]string{
		"io.kubernetes.cri.container-type": "container", "io.kubernetes.cri.sandbox-id": sandboxID}}}
}

func TestPodToJoin(t *testing.T) {
	root := t.TempDir()
	g := &globalOptions{root: root}
	saveRecord(t, root, state.Container{ID: "pod", Recorded: state.Running}, true)
	saveRecord(t, root, state.Container{ID: "gone", Recorded: state.Running}, false)
	saveRecord(t, root, state.Container{ID: "member", Recorded: state.Running, Pod: "pod"}, true)

	r, err := podToJoin(g, "app", appBundle("pod"))
	if err != nil || r == nil {
		t.Fatalf("a running moat pod sandbox: route %v, error %v; want a route", r, err)
	}
	if r.container != "app" || r.pod.ID != "pod" || !strings.HasSuffix(r.socket, "/"+state.ControlSocketName) {
		t.Errorf("route to container %q of pod %q at %q, want app of pod, at its control socket", r.container, r.pod.ID, r.socket)
	}
	r.close()

	for _, tc := range []struct {
		name string
		b    *bundle.Bundle
	}{
		{"no pod", &bundle.Bundle{Spec: &specs.Spec{}}},
		{"a pod moat does not run", appBundle("elsewhere")},
	} {
		if r, err := podToJoin(g, "app", tc.b); r != nil || err != nil {
			t.Errorf("%s: route %v, error %v; want a sandbox of its own", tc.name, r, err)
		}
	}
	for _, tc := range []struct{ name, pod, want string }{
		{"a stopped pod", "gone", "pod sandbox gone is stopped"},
		{"a pod's container for a pod", "member", "is itself a container of pod pod"},
	} {
		if _, err := podToJoin(g, "app", appBundle(tc.pod)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one saying %q", tc.name, err, tc.want)
		}
	}
}

func TestRouteOf(t *testing.T) {
	root := t.TempDir()
	g := &globalOptions{root: root}
	saveRecord(t, root, state.Container{ID: "pod", Recorded: state.Running}, true)
	saveRecord(t, root, state.Container{ID: "member", Recorded: state.Running, Pod: "pod"}, true)
	saveRecord(t, root, state.Container{ID: "orphan", Recorded: state.Running, Pod: "deleted"}, true)

	route := func(id string) (*route, error) {
		dir, c, err := openContainer(g, id)
		if err != nil {
			t.Fatal(err)
		}
		defer dir.Close()
		return routeOf(g, dir, c)
	}
	same := func(a, b string) bool {
		sa, errA := os.Stat(filepath.Dir(a))
		sb, errB := os.Stat(filepath.Dir(b))
		return errA == nil && errB == nil && os.SameFile(sa, sb)
	}
	own, err := route("pod")
	if err != nil || own.container != "" || own.pod != nil {
		t.Fatalf("the pod's own: %+v, %v; want its own socket, no container named", own, err)
	}
	defer own.close()
	r, err := route("member")
	if err != nil {
		t.Fatal(err)
	}
	defer r.close()
	if r.container != "member" {
		t.Errorf("a pod's container's requests name %q, want member", r.container)
	}
	podDir, err := state.Open(root, "pod")
	if err != nil {
		t.Fatal(err)
	}
	defer podDir.Close()
	if !same(r.socket, podDir.ControlSocket()) {
		t.Errorf("a pod's container is served at %s, not at its pod's socket", r.socket)
	}
	if _, err := route("orphan"); err == nil || !strings.Contains(err.Error(), "deleted does not exist") {
		t.Errorf("a container whose pod is gone: %v, want an error naming the pod", err)
	}
}
