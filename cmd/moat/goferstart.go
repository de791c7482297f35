package main

import (
	"fmt"
	"os"
	"os/exec"
	"syscall"

	"github.com/moat-sandbox/moat/internal/bundle"
	"github.com/moat-sandbox/moat/internal/cgroups"
	"github.com/moat-sandbox/moat/internal/confine"
	"github.com/moat-sandbox/moat/internal/control"
	"golang.org/x/sys/unix"
)

// goferSockets are the sockets between a container's gofer and the
// sentry that mounts what it serves: one for the root file system, then
// one per bind mount of the bundle, and the gofer's arguments to match.
type goferSockets struct {
	args   []string
	caps   uint64 // the capabilities the gofer keeps (--caps)
	writes string // bundle.RootfsWrites's answer
	// goferFDs are the gofer's descriptors by number; sentryEnds the
	// other ends, the root's first.
	goferFDs   map[int]*os.File
	sentryEnds []*os.File
	binds      []control.Bind
	all        []*os.File
}

// planGofer makes the sockets of b's gofer and its arguments. The caller
// closes them (close) once both sides hold their ends.
func planGofer(g *globalOptions, b *bundle.Bundle) (_ *goferSockets, err error) {
	gs := &goferSockets{goferFDs: map[int]*os.File{}}
	defer func() {
		if err != nil {
			gs.close()
		}
	}()
	var goferEnds []*os.File
	for range 1 + len(b.Binds) {
		ge, se, err := socketPair(unix.SOCK_SEQPACKET)
		if err != nil {
			return nil, fmt.Errorf("gofer socket: %w", err)
		}
		gs.all = append(gs.all, ge, se)
		goferEnds, gs.sentryEnds = append(goferEnds, ge), append(gs.sentryEnds, se)
	}
	if gs.writes, err = b.RootfsWrites(g.rootfsWrites); err != nil {
		return nil, err
	}
	gs.args = []string{"--rootfs", b.Rootfs}
	if b.Spec.Root.Readonly || gs.writes == bundle.WritesOverlay {
		// The image is never written: the gofer refuses it too.
		gs.args = append(gs.args, "--readonly")
	}
	gs.goferFDs[control.GoferServeFD] = goferEnds[0]
	for i, m := range b.Binds {
		gs.args = append(gs.args, "--bind", bindArg(m))
		gs.goferFDs[control.GoferBindFD0+i] = goferEnds[1+i]
		root, source := hostOrigin(m.Source)
		gs.binds = append(gs.binds, control.Bind{Index: m.Index, HostRoot: root, HostSource: source})
	}
	privilegeArgs, keep := goferPrivilegeArgs(b.Spec.Process)
	gs.args, gs.caps = append(gs.args, privilegeArgs...), keep
	if mode := os.Getenv(hostCallsEnv); mode != "" {
		gs.args = append(gs.args, "--host-calls", mode)
	}
	return gs, nil
}

// close closes this CLI's copies of every end.
func (gs *goferSockets) close() {
	for _, f := range gs.all {
		f.Close()
	}
}

// startGofer starts the gofer gs describes in cg.
func startGofer(g *globalOptions, cg *cgroups.Cgroup, gs *goferSockets) (*exec.Cmd, error) {
	cmd := internalCommand("gofer", gs.args...)
	cmd.ExtraFiles = childFDs(gs.goferFDs)
	if g.log.file != nil {
		cmd.Stderr = g.log.file
	}
	// Its own session: no signal meant for the CLI's terminal reaches it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	confine.GoferProcAttr(cmd.SysProcAttr, sandboxIDs(), os.Geteuid() == 0)
	if err := startConfined(cg, cmd, gs.caps); err != nil {
		return nil, fmt.Errorf("start gofer: %w", err)
	}
	return cmd, nil
}
