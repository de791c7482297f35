package e2b

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/internal/control"
	"github.com/moat-sandbox/moat/internal/ocirun"
	"github.com/moat-sandbox/moat/internal/state"
	"github.com/moat-sandbox/moat/internal/usernet"
	"github.com/moat-sandbox/moat/sentry/net/netstack"
)

// runtime is moat itself: its command line (a subprocess, at a state
// directory of the server's own) creates, starts and deletes sandboxes,
// and each sandbox's control socket starts processes in it, as `moat
// exec` does.
type runtime struct {
	root    ocirun.Root
	bundles string // one bundle directory per sandbox
	limits  Limits // every sandbox's
}

func newRuntime(binary string, flags []string, stateDir string, limits Limits) (*runtime, error) {
	rt := &runtime{bundles: filepath.Join(stateDir, "bundles"), limits: limits}
	moat := &ocirun.Runtime{Name: "moat", Path: binary,
		Flags: append([]string{"--log", filepath.Join(stateDir, "moat.log")}, flags...)}
	rt.root = moat.At(filepath.Join(stateDir, "run"))
	for _, d := range []string{rt.root.Dir, rt.bundles} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, err
		}
	}
	return rt, nil
}

// sweep deletes what a server that died left: its sandboxes and their
// bundles.
func (rt *runtime) sweep() error {
	err := rt.root.Sweep()
	entries, rerr := os.ReadDir(rt.bundles)
	for _, e := range entries {
		err = errors.Join(err, os.RemoveAll(filepath.Join(rt.bundles, e.Name())))
	}
	return errors.Join(err, rerr)
}

// defaultPath is the PATH of every process, as Debian's login shell sets
// it for root.
const defaultPath = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// rootCaps are the capabilities a root process gets, the set container
// engines give a container's root by default.
var rootCaps = []string{"CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_FSETID", "CAP_FOWNER", "CAP_MKNOD",
	"CAP_NET_RAW", "CAP_SETGID", "CAP_SETUID", "CAP_SETFCAP", "CAP_SETPCAP", "CAP_NET_BIND_SERVICE",
	"CAP_SYS_CHROOT", "CAP_KILL", "CAP_AUDIT_WRITE"}

// sandboxSpec is a sandbox's container: the template's tree as its root,
// writable through an overlay kept in the sandbox (the tree itself is
// never written), with its own /dev, /dev/shm and /tmp, and network: its
// loopback alone, or the user-space network (usernet.Annotation), with
// the allowlist if any, and the bundle's resolv.conf (writeResolvConf)
// over the image's; limits hard. Its init only waits: commands come
// through exec.
func sandboxSpec(rootfs, id, bundle string, network egress, limits Limits) *specs.Spec {
	spec := ocirun.Spec([]string{"/bin/sleep", "infinity"}, []string{defaultPath}, "e2b-"+id)
	spec.Root = &specs.Root{Path: rootfs}
	spec.Process.Capabilities = capabilities(0)
	spec.Linux.Resources = limits.resources()
	spec.Mounts = []specs.Mount{
		ocirun.Proc(),
		ocirun.Tmpfs("/dev", "nosuid", "mode=755", "size=1m"),
		ocirun.Devpts(),
		{Destination: "/dev/shm", Type: "tmpfs", Source: "shm", Options: []string{"nosuid", "nodev", "mode=1777", "size=64m"}},
		ocirun.Tmpfs("/tmp", "nosuid", "nodev", "mode=1777", "size=1g"),
	}
	if network.user {
		spec.Annotations = map[string]string{usernet.Annotation: usernet.AnnotationUser}
		if network.allow != nil {
			spec.Annotations[netstack.EgressAnnotation] = strings.Join(network.allow, ",")
		}
		spec.Mounts = append(spec.Mounts, specs.Mount{Destination: "/etc/resolv.conf", Type: "bind",
			Source: filepath.Join(bundle, resolvConfName), Options: []string{"bind", "ro", "nosuid", "nodev"}})
	}
	return spec
}

// resolvConfName is the file in a sandbox's bundle that is its
// /etc/resolv.conf when it has a network: the user-space network's
// resolver, which answers what the allowlist allows.
const resolvConfName = "resolv.conf"

// capabilities are a process's for uid: rootCaps for root, none for
// another user.
func capabilities(uid uint32) *specs.LinuxCapabilities {
	if uid != 0 {
		return &specs.LinuxCapabilities{Bounding: rootCaps}
	}
	return &specs.LinuxCapabilities{Bounding: rootCaps, Effective: rootCaps, Permitted: rootCaps}
}

// instance is one running sandbox as the runtime sees it.
type instance struct {
	id string
	// mu keeps dir open while a dial goes through it: once closed, its
	// descriptor's number may name another sandbox's directory.
	mu     sync.RWMutex
	dir    *os.File // its state directory, which reaches its control socket
	closed bool
}

// create boots sandbox id on rootfs with network and starts it.
func (rt *runtime) create(id, rootfs string, network egress) (*instance, error) {
	bundle := filepath.Join(rt.bundles, id)
	if err := os.Mkdir(bundle, 0o700); err != nil {
		return nil, err
	}
	inst, err := rt.boot(id, bundle, rootfs, network)
	if err != nil {
		rt.root.Delete(id)
		os.RemoveAll(bundle)
		return nil, err
	}
	return inst, nil
}

func (rt *runtime) boot(id, bundle, rootfs string, network egress) (*instance, error) {
	if network.user {
		if err := os.WriteFile(filepath.Join(bundle, resolvConfName), []byte(usernet.ResolvConf), 0o444); err != nil {
			return nil, err
		}
	}
	if err := ocirun.WriteSpec(bundle, sandboxSpec(rootfs, id, bundle, network, rt.limits)); err != nil {
		return nil, err
	}
	// The sentry keeps create's stdout and stderr as the init's: a file,
	// which nothing needs to read for the sandbox to go on.
	out, err := os.OpenFile(filepath.Join(bundle, "output.log"), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	defer out.Close()
	if err := rt.root.Create(bundle, id, ocirun.Stdio{Stdout: out, Stderr: out}); err != nil {
		return nil, err
	}
	x := ocirun.Run(context.Background(), rt.root.Command("start", id), ocirun.Stdio{Stdout: out, Stderr: out},
		ocirun.Limits{Timeout: ocirun.CommandTimeout})
	if err := x.Err(); err != nil {
		return nil, fmt.Errorf("moat start %s: %w (see %s)", id, err, out.Name())
	}
	dir, err := os.OpenFile(filepath.Join(rt.root.Dir, id), unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	return &instance{id: id, dir: dir}, nil
}

// destroy kills sandbox id and deletes everything it had.
func (rt *runtime) destroy(inst *instance) error {
	inst.mu.Lock()
	inst.closed = true
	inst.dir.Close()
	inst.mu.Unlock()
	err := rt.root.Delete(inst.id)
	return errors.Join(err, os.RemoveAll(filepath.Join(rt.bundles, inst.id)))
}

// dial connects to the sandbox's control socket through its open
// directory, whose path may be longer than a socket address holds.
func (inst *instance) dial() (*control.Conn, error) {
	inst.mu.RLock()
	defer inst.mu.RUnlock()
	if inst.closed {
		return nil, fmt.Errorf("sandbox %s is gone", inst.id)
	}
	return control.Dial(fmt.Sprintf("/proc/self/fd/%d/%s", inst.dir.Fd(), state.ControlSocketName), execFirstAnswer)
}

// call sends req, with files, to the sandbox's sentry and returns its
// answer, waiting at most statsTimeout (its sentry answers at once, or
// has died).
func (inst *instance) call(ctx context.Context, req control.Request, files ...*os.File) (control.Response, error) {
	ctx, cancel := context.WithTimeout(ctx, statsTimeout)
	defer cancel()
	conn, err := inst.dial()
	if err != nil {
		return control.Response{}, err
	}
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { conn.SetDeadline(time.Now()) })
	defer stop()
	if err := conn.Send(req, files...); err != nil {
		return control.Response{}, err
	}
	resp, err := receive(ctx, conn, req.Op)
	if err != nil {
		return control.Response{}, err
	}
	return resp, resp.Err()
}

// usernetPolicy gives the sandbox's moat usernet, the host's side of its
// user-space network, the allowlist e (its socket in the sandbox's
// directory: state.UsernetSocketName), waiting at most statsTimeout.
func (inst *instance) usernetPolicy(ctx context.Context, e *control.Egress) error {
	ctx, cancel := context.WithTimeout(ctx, statsTimeout)
	defer cancel()
	// Held across the call, as dial holds it: the directory's descriptor
	// must not be closed, and its number reused, under the path.
	inst.mu.RLock()
	defer inst.mu.RUnlock()
	if inst.closed {
		return fmt.Errorf("sandbox %s is gone", inst.id)
	}
	path := fmt.Sprintf("/proc/self/fd/%d/%s", inst.dir.Fd(), state.UsernetSocketName)
	deadline, _ := ctx.Deadline()
	if err := control.Call(path, control.Request{Op: control.OpEgress, Egress: e}, time.Until(deadline)); err != nil {
		return fmt.Errorf("the network's allowlist: %w", err)
	}
	return nil
}

// stats is the sandbox's usage as its sentry counts it.
func (inst *instance) stats(ctx context.Context) (*control.Stats, error) {
	resp, err := inst.call(ctx, control.Request{Op: control.OpStats})
	if err == nil && resp.Stats == nil {
		err = fmt.Errorf("sandbox %s answered stats without any", inst.id)
	}
	return resp.Stats, err
}

// execFirstAnswer bounds the wait for the sentry to start a process.
const execFirstAnswer = 30 * time.Second

// execution is a process started in a sandbox: its control connection
// carries the signals sent to it and, once, its exit status.
type execution struct {
	pid  uint32
	conn *control.Conn
	mu   sync.Mutex // serialises sends on conn
}

// exec starts p in the sandbox with stdio as its fds 0, 1 and 2, or,
// for a process with a terminal, with the one replica of a terminal of
// the caller's. The caller keeps its own stdio files and closes them.
func (inst *instance) exec(p *specs.Process, stdio ...*os.File) (*execution, error) {
	conn, err := inst.dial()
	if err != nil {
		return nil, err
	}
	req := control.Request{Op: control.OpExec, Exec: &control.Exec{Process: p, Stdio: len(stdio)}}
	if err := conn.Send(req, stdio...); err != nil {
		conn.Close()
		return nil, err
	}
	conn.SetDeadline(time.Now().Add(execFirstAnswer))
	var resp control.Response
	if _, err := conn.Receive(&resp); err != nil {
		conn.Close()
		return nil, fmt.Errorf("the sandbox did not answer: %w", err)
	}
	if err := resp.Err(); err != nil {
		conn.Close()
		return nil, err
	}
	conn.SetDeadline(time.Time{})
	return &execution{pid: uint32(resp.PID), conn: conn}, nil
}

// signal sends sig to the process.
func (e *execution) signal(sig syscall.Signal) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.conn.Send(control.Request{Op: control.OpSignal, Signal: int(sig)})
}

// wait returns the process's status once it ends (the host's: its exit
// code, or 128+N if signal N killed it), and closes the connection. A
// sandbox that goes away takes the process with it: 128+SIGKILL.
func (e *execution) wait() int {
	defer e.conn.Close()
	for {
		var resp control.Response
		if _, err := e.conn.Receive(&resp); err != nil {
			return 128 + int(unix.SIGKILL)
		}
		if resp.Exit != nil {
			return *resp.Exit
		}
	}
}

// abandon kills the process: its connection closing kills it.
func (e *execution) abandon() { e.conn.Close() }

// drainGrace bounds how long output is read once a process has ended: a
// child it left in the background may hold its stdout open for good.
const drainGrace = 2 * time.Second

// pump copies r to w until r ends, or drainGrace after ended is closed,
// and then closes r. A failed write (a client that went away) stops the
// copy but not the reading, so that the process is never blocked on a
// full pipe.
func pump(r *os.File, w io.Writer, ended <-chan struct{}) {
	defer r.Close()
	go func() {
		<-ended
		r.SetReadDeadline(time.Now().Add(drainGrace))
	}()
	buf := make([]byte, 32<<10)
	for {
		n, err := r.Read(buf)
		if n > 0 && w != nil {
			if _, werr := w.Write(buf[:n]); werr != nil {
				w = nil
			}
		}
		if err != nil {
			return
		}
	}
}
