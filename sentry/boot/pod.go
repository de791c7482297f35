package boot

import (
	"fmt"
	"os"
	"sync"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/gofer"
	"github.com/moat-sandbox/moat/internal/control"
	"github.com/moat-sandbox/moat/internal/seccomp"
	"github.com/moat-sandbox/moat/sentry/fs/devpts"
	"github.com/moat-sandbox/moat/sentry/kernel"
	"github.com/moat-sandbox/moat/sentry/vfs"
)

// A pod's containers share its sandbox's sentry, as gVisor runs a pod:
// the sentry is booted for the pod's sandbox (pause) container, and each
// other container of the pod is an OpCreate on its control socket. Each
// has a mount tree of its own (its root through a gofer of its own, its
// config's mounts), so it is a mount namespace of its own; it shares the
// kernel's network stack (loopback included), UTS and IPC namespaces. Its
// pid namespace is a new one nested in the sandbox's, as runc gives each
// container of a pod one, unless its config joins the pod's (Kubernetes'
// shareProcessNamespace): the sandbox's own then. Its processes carry its
// id (InitSpec.Container), so that a kill, ps or exec that names it
// reaches them alone.

// pod is the sandbox's other containers, by id.
type pod struct {
	mu      sync.Mutex
	members map[string]*member
}

// member is one container of the pod made by OpCreate.
type member struct {
	id      string
	root    vfs.Path
	seccomp []seccomp.Insn
	init    *kernel.Process
	// pidns is its pid namespace, whose init is init; nil when the config
	// joins its pod's (a pid namespace entry with a path): its processes
	// are then in the sandbox's, init is no namespace's init and takes
	// signals from outside as any process does.
	pidns *kernel.PIDNamespace
	// gofers serve its tree; they are closed when it goes, and the gofer
	// process then lets go of everything it held for it.
	gofers []*gofer.Client
}

// place is what a process started in a container runs in: its tree, its
// filter and pid namespace (nil: the sandbox's), and its id ("" for the
// sandbox's own container).
type place struct {
	container string
	root      vfs.Path
	seccomp   []seccomp.Insn
	pidns     *kernel.PIDNamespace
}

// place finds container id: the sandbox's own for "", else a member.
func (s *Sandbox) place(id string) (place, error) {
	if id == "" {
		return place{root: s.Kernel.Root, seccomp: s.seccomp}, nil
	}
	m, err := s.pod.get(id)
	if err != nil {
		return place{}, err
	}
	return place{container: id, root: m.root, seccomp: m.seccomp, pidns: m.pidns}, nil
}

func (p *pod) get(id string) (*member, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	m := p.members[id]
	if m == nil {
		return nil, fmt.Errorf("container %s is not in this pod", id)
	}
	return m, nil
}

// add enters m, unless a container of its id is there already.
func (p *pod) add(m *member) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.members[m.id] != nil {
		return fmt.Errorf("container %s is in this pod already", m.id)
	}
	if p.members == nil {
		p.members = make(map[string]*member)
	}
	p.members[m.id] = m
	return nil
}

// remove takes m out and closes its gofer connections: none of its
// processes is left.
func (p *pod) remove(m *member) {
	p.mu.Lock()
	if p.members[m.id] == m {
		delete(p.members, m.id)
	}
	p.mu.Unlock()
	for _, c := range m.gofers {
		c.Close()
	}
}

// serveCreate makes the container of an OpCreate and serves its init on
// conn as serveExec serves an exec'd process, held until an OpStart
// names it. When the init ends, so does every other process of the
// container, as those of its pid namespace would; when conn closes
// first (`moat delete`, or the process standing for the init killed),
// the whole container is killed.
func (s *Sandbox) serveCreate(conn *control.Conn, req control.Request, files []*os.File) {
	defer conn.Close()
	m, con, err := s.createMember(req.Create, files)
	if err != nil {
		conn.Send(control.Response{Error: err.Error()})
		return
	}
	defer s.pod.remove(m)
	killAll := func() { s.Kernel.SignalContainer(m.id, int(unix.SIGKILL)) }
	attend(conn, m.init, con, m.signalInit, func() {
		killAll()
		m.init.Signal(int(unix.SIGKILL))
		m.init.Run() // one never started ends at once
	}, killAll)
}

// createMember builds the container c describes with files as its
// descriptors (stdio, then its gofer sockets), which it owns whatever
// happens.
func (s *Sandbox) createMember(c *control.Create, files []*os.File) (_ *member, _ *devpts.Console, err error) {
	defer func() {
		for _, f := range files {
			f.Close() // what is kept was duplicated
		}
	}()
	switch {
	case c == nil || c.Spec == nil || c.Spec.Process == nil || c.Spec.Root == nil:
		return nil, nil, fmt.Errorf("create: no container, process or root")
	case c.ID == "":
		return nil, nil, fmt.Errorf("create: the container has no id")
	case s.Kernel.Frozen():
		return nil, nil, fmt.Errorf("cannot create a container in a paused pod")
	case c.Stdio < 0 || c.Stdio > 3 || (c.Spec.Process.Terminal && c.Stdio != 1) || len(files) != c.Stdio+1+len(c.Binds):
		return nil, nil, fmt.Errorf("create: %d descriptors for %d stdio, a root and %d bind mounts", len(files), c.Stdio, len(c.Binds))
	}
	if _, err := s.pod.get(c.ID); err == nil {
		return nil, nil, fmt.Errorf("container %s is in this pod already", c.ID)
	}
	m := &member{id: c.ID}
	pidns := s.Kernel.RootPIDNamespace()
	if !joinsPidNamespace(c.Spec.Linux) {
		if pidns, err = s.Kernel.NewPIDNamespace(); err != nil {
			return nil, nil, fmt.Errorf("create: a pid namespace: %w", err)
		}
		m.pidns = pidns
	}
	defer func() {
		if err != nil {
			for _, g := range m.gofers {
				g.Close()
			}
		}
	}()
	for _, f := range files[c.Stdio:] {
		fd, err := unix.FcntlInt(f.Fd(), unix.F_DUPFD_CLOEXEC, 3)
		if err != nil {
			return nil, nil, fmt.Errorf("create: gofer socket: %w", err)
		}
		m.gofers = append(m.gofers, gofer.NewClient(fd))
	}
	spec := c.Spec
	setup := &control.Setup{ID: c.ID, Spec: spec, Binds: c.Binds, RootfsWrites: c.RootfsWrites}
	if m.root, err = buildTree(setup, m.gofers[0], m.gofers[1:], s.mf, s.Kernel, pidns, s.log); err != nil {
		return nil, nil, err
	}
	if err := applyPathRules(m.root, spec.Linux, s.mf); err != nil {
		return nil, nil, err
	}
	if spec.Linux != nil {
		if m.seccomp, err = seccompProgram(spec.Linux.Seccomp); err != nil {
			return nil, nil, err
		}
	}
	init, err := initSpec(spec.Process)
	if err != nil {
		return nil, nil, err
	}
	init.Root, init.Container, init.Seccomp, init.PIDNamespace = m.root, m.id, m.seccomp, m.pidns
	con, err := attachFiles(&init, m.root, spec.Process.Terminal, files[:c.Stdio])
	if err != nil {
		return nil, nil, err
	}
	// CreateProcess owns the references from here, whatever it answers.
	if m.init, err = s.Kernel.CreateProcess(init); err != nil {
		if con != nil {
			con.Close()
		}
		if err == kernel.ErrSandboxEnded {
			err = fmt.Errorf("cannot create a container in a stopped pod")
		}
		return nil, nil, err
	}
	if err := s.pod.add(m); err != nil {
		m.init.Signal(int(unix.SIGKILL))
		m.init.Run()
		if con != nil {
			con.Close()
		}
		return nil, nil, err
	}
	return m, con, nil
}

// startMember runs the init of container id, held since its OpCreate.
func (s *Sandbox) startMember(id string) error {
	m, err := s.pod.get(id)
	if err != nil {
		return err
	}
	m.init.Run()
	return nil
}

// signalMember delivers a signal from outside to container id: SIGKILL
// ends every process of it, as its init's death would (and as runc kills
// a container's cgroup); another signal reaches its init (signalInit),
// or every process with all.
func (s *Sandbox) signalMember(id string, sig int, all bool) error {
	m, err := s.pod.get(id)
	switch {
	case err != nil:
		return err
	case sig < 0 || sig > 64:
		return fmt.Errorf("invalid signal %d", sig)
	case sig == 0:
	case sig == int(unix.SIGKILL):
		s.Kernel.SignalContainer(id, sig)
		m.init.Run() // a container killed before start ends without running
	case all:
		s.Kernel.SignalContainer(id, sig)
	default:
		m.signalInit(sig)
	}
	return nil
}

// signalInit sends sig from outside to the container's init: as to a
// pid namespace's init (only if handled, SIGKILL always) unless the
// container shares its pod's pid namespace.
func (m *member) signalInit(sig int) {
	if m.pidns == nil {
		m.init.Signal(sig)
		return
	}
	m.init.SignalAsInit(sig)
}

// joinsPidNamespace reports whether the config names a pid namespace to
// join (the pod's, when the pod shares one among its containers).
func joinsPidNamespace(l *specs.Linux) bool {
	if l == nil {
		return false
	}
	for _, ns := range l.Namespaces {
		if ns.Type == specs.PIDNamespace && ns.Path != "" {
			return true
		}
	}
	return false
}
