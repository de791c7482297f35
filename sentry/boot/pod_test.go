package boot

import (
	"os"
	"strings"
	"testing"
	"time"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/moat-sandbox/moat/internal/control"
	"github.com/moat-sandbox/moat/sentry/kernel/kerneltest"
	"github.com/moat-sandbox/moat/syscalls"
)

// Requests that name a container the pod does not hold are refused, and
// reach nothing of the sandbox's own container.
func TestARequestForAContainerNotInThePodIsRefused(t *testing.T) {
	ks := kerneltest.New(t, syscalls.NewTable())
	sock := controlSocket(t, &Sandbox{Kernel: ks.Kernel})
	for _, op := range []string{control.OpStart, control.OpKill, control.OpPs, control.OpStats, control.OpPause} {
		_, err := control.CallFor(sock, control.Request{Op: op, Container: "nope", Signal: 9}, 5*time.Second)
		if err == nil || !strings.Contains(err.Error(), "container nope is not in this pod") {
			t.Errorf("%s for a container not in the pod: %v", op, err)
		}
	}
}

// A create that does not bring what it says (its stdio, a root and a
// socket per bind mount) is refused before anything is made.
func TestACreateWithoutItsDescriptorsIsRefused(t *testing.T) {
	ks := kerneltest.New(t, syscalls.NewTable())
	sock := controlSocket(t, &Sandbox{Kernel: ks.Kernel})
	spec := &specs.Spec{Process: &specs.Process{Args: []string{"/bin/true"}, Cwd: "/"}, Root: &specs.Root{Path: "rootfs"}}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	for _, tc := range []struct {
		name   string
		create *control.Create
		files  []*os.File
		want   string
	}{
		{"no container", nil, nil, "no container"},
		{"no id", &control.Create{Spec: spec}, []*os.File{r}, "has no id"},
		{"no root socket", &control.Create{ID: "c", Spec: spec, Stdio: 1}, []*os.File{r}, "1 descriptors for 1 stdio, a root and 0 bind mounts"},
		{"no bind socket", &control.Create{ID: "c", Spec: spec, Binds: []control.Bind{{Index: 0}}}, []*os.File{r}, "a root and 1 bind mounts"},
	} {
		conn, err := control.Dial(sock, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if err := conn.Send(control.Request{Op: control.OpCreate, Create: tc.create}, tc.files...); err != nil {
			t.Fatal(err)
		}
		var resp control.Response
		if _, err := conn.Receive(&resp); err != nil {
			t.Fatal(err)
		}
		conn.Close()
		if err := resp.Err(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error saying %q", tc.name, err, tc.want)
		}
	}
}

func TestJoinsPidNamespace(t *testing.T) {
	for _, tc := range []struct {
		name  string
		linux *specs.Linux
		want  bool
	}{
		{"no linux", nil, false},
		{"a pid namespace of its own", &specs.Linux{Namespaces: []specs.LinuxNamespace{{Type: specs.PIDNamespace}}}, false},
		{"the pod's pid namespace", &specs.Linux{Namespaces: []specs.LinuxNamespace{{Type: specs.PIDNamespace, Path: "/proc/7/ns/pid"}}}, true},
		{"the pod's network alone", &specs.Linux{Namespaces: []specs.LinuxNamespace{{Type: specs.NetworkNamespace, Path: "/proc/7/ns/net"}}}, false},
	} {
		if got := joinsPidNamespace(tc.linux); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}
