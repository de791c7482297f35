package main

import (
	"errors"
	"fmt"
	"os"
	"time"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/internal/bundle"
	"github.com/moat-sandbox/moat/internal/control"
	"github.com/moat-sandbox/moat/internal/state"
)

// A Kubernetes pod's containers share the sentry of the pod's sandbox
// (pause) container, as gVisor runs a pod: the CRI marks each container
// it creates with its type and its pod's sandbox id, and a container
// whose sandbox is a running moat container under the same --root joins
// that sandbox instead of booting one of its own (docs/architecture.md,
// "Pods").

// The annotations CRI runtimes set on a pod's containers: containerd's
// CRI plugin and CRI-O, each the container's type (the pod's sandbox, or
// one of its containers) and the id of its pod's sandbox container.
var podAnnotations = []struct{ kind, sandbox string }{
	{"io.kubernetes.cri.container-type", "io.kubernetes.cri.sandbox-id"},
	{"io.kubernetes.cri-o.ContainerType", "io.kubernetes.cri-o.SandboxID"},
}

// podSandboxOf is the id of the pod's sandbox container that the
// container with these annotations belongs to, or "" when it is no
// CRI container of a pod (a pod's sandbox itself included).
func podSandboxOf(annotations map[string]string) string {
	for _, a := range podAnnotations {
		if annotations[a.kind] == "container" && annotations[a.sandbox] != "" {
			return annotations[a.sandbox]
		}
	}
	return ""
}

// route is where the requests for a container go: its own sentry's
// control socket, or its pod's, naming it.
type route struct {
	socket    string
	container string     // control.Request.Container
	pod       *state.Dir // the pod's state directory, open and unlocked; nil for a sentry of its own
}

// routeOf is the route to container c, whose directory dir is locked.
func routeOf(g *globalOptions, dir *state.Dir, c *state.Container) (*route, error) {
	if c.Pod == "" {
		return &route{socket: dir.ControlSocket()}, nil
	}
	pd, err := state.Open(g.root, c.Pod)
	if errors.Is(err, state.ErrNotExist) {
		return nil, fmt.Errorf("container %s: its pod's sandbox container %s does not exist", c.ID, c.Pod)
	}
	if err != nil {
		return nil, err
	}
	// Only the socket is wanted: the pod's own commands go on meanwhile.
	if err := pd.Unlock(); err != nil {
		pd.Close()
		return nil, err
	}
	return &route{socket: pd.ControlSocket(), container: c.ID, pod: pd}, nil
}

// call sends req to the container and waits for the answer.
func (r *route) call(req control.Request, timeout time.Duration) (control.Response, error) {
	req.Container = r.container
	return control.CallFor(r.socket, req, timeout)
}

func (r *route) close() {
	if r.pod != nil {
		r.pod.Close()
	}
}

// callContainer sends req to container c (dir locked) wherever its
// sentry is.
func callContainer(g *globalOptions, dir *state.Dir, c *state.Container, req control.Request, timeout time.Duration) (control.Response, error) {
	r, err := routeOf(g, dir, c)
	if err != nil {
		return control.Response{}, err
	}
	defer r.close()
	return r.call(req, timeout)
}

// podToJoin is the route to the sandbox that a container created from b
// joins, or nil when it boots one of its own: it is no pod's container,
// or its pod's sandbox is not a moat container under this root (a pod
// that another runtime runs).
func podToJoin(g *globalOptions, id string, b *bundle.Bundle) (*route, error) {
	podID := podSandboxOf(b.Spec.Annotations)
	if podID == "" || podID == id {
		return nil, nil
	}
	pd, pod, err := openContainer(g, podID)
	if errors.Is(err, state.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("pod sandbox %s: %w", podID, err)
	}
	ok := false
	defer func() {
		if !ok {
			pd.Close()
		}
	}()
	switch st := pod.Status(); {
	case pod.Pod != "":
		return nil, fmt.Errorf("pod sandbox %s is itself a container of pod %s", podID, pod.Pod)
	case st != state.Created && st != state.Running:
		return nil, fmt.Errorf("pod sandbox %s is %s: a container cannot join it", podID, st)
	}
	if err := pd.Unlock(); err != nil {
		return nil, err
	}
	ok = true
	return &route{socket: pd.ControlSocket(), container: id, pod: pd}, nil
}

// joinPod makes container c of bundle b in its pod's sandbox (pod): a
// gofer of its own for its root and bind mounts, in its cgroup (inner),
// and its init in the pod's sentry (OpCreate), with stdio as its fds 0,
// 1 and 2 (one file, the terminal's replica, with process.terminal). A
// host process takes the create connection over and stands for the init
// (`moat exec-wait`, as for a detached exec): it is the container's pid,
// exits with the init's status, and killing it kills the container. On
// error nothing it started remains.
func joinPod(g *globalOptions, dir *state.Dir, c *state.Container, b *bundle.Bundle, inner string, stdio []*os.File, pod *route) (err error) {
	// As for a sandbox of its own (startSandbox): the gofer gets only
	// what ExtraFiles names.
	if err := unix.CloseRange(3, ^uint(0), unix.CLOSE_RANGE_CLOEXEC); err != nil {
		return fmt.Errorf("mark inherited descriptors close-on-exec: %w", err)
	}
	gs, err := planGofer(g, b)
	if err != nil {
		return err
	}
	defer gs.close()
	if c.Cgroup, err = makeCgroup(g, inner, b.Spec.Linux); err != nil {
		return err
	}
	c.Pod = pod.pod.ID
	defer func() {
		if err != nil {
			stopPodMember(c)
		}
	}()
	if err := dir.Save(c); err != nil {
		return err
	}
	gofer, err := startGofer(g, c.Cgroup, gs)
	if err != nil {
		return err
	}
	// An unreaped child: its pid cannot have been reused yet.
	if c.Gofer, err = state.Identify(gofer.Process.Pid); err != nil {
		gofer.Process.Kill()
		return fmt.Errorf("gofer: %w", err)
	}
	if err := dir.Save(c); err != nil {
		return err
	}
	conn, err := control.Dial(pod.socket, controlTimeout)
	if err != nil {
		return fmt.Errorf("pod sandbox %s: %w", c.Pod, err)
	}
	defer conn.Close()
	req := control.Request{Op: control.OpCreate, Create: &control.Create{ID: c.ID, Spec: b.Spec, Binds: gs.binds,
		RootfsWrites: gs.writes, Stdio: len(stdio)}}
	if err := conn.Send(req, append(stdio, gs.sentryEnds...)...); err != nil {
		return fmt.Errorf("create container %s in pod %s: %w", c.ID, c.Pod, err)
	}
	// Both sides hold their ends now: each sees the other's close.
	gs.close()
	conn.SetDeadline(time.Now().Add(readyTimeout))
	var resp control.Response
	if _, err := conn.Receive(&resp); err != nil {
		return fmt.Errorf("create container %s in pod %s: the sentry did not answer: %w", c.ID, c.Pod, err)
	}
	if err := resp.Err(); err != nil {
		return err
	}
	conn.SetDeadline(time.Time{})
	pid, err := startExecWait(conn, c.Cgroup)
	if err != nil {
		return err
	}
	if c.Sentry, err = state.Identify(pid); err != nil {
		return fmt.Errorf("the init's stand-in: %w", err)
	}
	g.log.debugf("container %s: in pod %s as guest pid %d, gofer pid %d, stand-in pid %d", c.ID, c.Pod, resp.PID, c.Gofer.PID, pid)
	return dir.Save(c)
}

// stopPodMember undoes joinPod for a create that fails after it: the
// init's stand-in killed takes the container's processes with it (the
// sentry sees its connection close), then the gofer and the cgroup go.
func stopPodMember(c *state.Container) {
	for _, p := range []state.Process{c.Sentry, c.Gofer} {
		p.Kill()
	}
	for _, p := range []state.Process{c.Sentry, c.Gofer} {
		p.WaitGone(exitTimeout)
	}
	c.Cgroup.Destroy(exitTimeout)
}
