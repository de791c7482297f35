package main

import (
	"fmt"
	"time"

	"github.com/moat-sandbox/moat/internal/state"
	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// openContainer locks id's state directory and loads its record; the caller
// closes the directory when its command is done.
func openContainer(g *globalOptions, id string) (*state.Dir, *state.Container, error) {
	dir, err := state.Open(g.root, id)
	if err != nil {
		return nil, nil, err
	}
	c, err := dir.Load()
	if err != nil {
		dir.Close()
		return nil, nil, err
	}
	return dir, c, nil
}

// destroy kills whatever still runs of container c, waits until its sentry
// and gofer (and moat usernet, for a user-space network) are gone, removes its cgroup (killing what is left in it: the
// stubs of a sentry that was killed) and its state directory. If a process
// outlives the wait the directory stays, so that a later delete can try
// again.
//
// A container of a pod is killed through the pod's sentry first, so that
// its processes are gone before its gofer is.
func destroy(g *globalOptions, dir *state.Dir, c *state.Container) error {
	if c.Pod != "" && c.Sentry.Alive() {
		if err := killSandbox(g, dir, c, true); err != nil {
			return err
		}
	}
	procs := []struct {
		name string
		p    state.Process
	}{{"sentry", c.Sentry}, {"gofer", c.Gofer}, {"usernet", c.Usernet}}
	for _, proc := range procs {
		if err := proc.p.Kill(); err != nil {
			return fmt.Errorf("%s: %w", proc.name, err)
		}
	}
	for _, proc := range procs {
		if err := proc.p.WaitGone(exitTimeout); err != nil {
			return fmt.Errorf("%s: %w", proc.name, err)
		}
	}
	if err := c.Cgroup.Destroy(exitTimeout); err != nil {
		return err
	}
	runPoststopHooks(g, c)
	g.log.debugf("container %s: its processes are gone, removing its state", c.ID)
	return dir.Remove()
}

// ociState is the runtime-spec state of a container with the fields runc
// adds (rootfs, created, owner), under runc's names.
type ociState struct {
	OCIVersion  string            `json:"ociVersion"`
	ID          string            `json:"id"`
	PID         int               `json:"pid"`
	Status      state.Status      `json:"status"`
	Bundle      string            `json:"bundle"`
	Rootfs      string            `json:"rootfs"`
	Created     time.Time         `json:"created"`
	Annotations map[string]string `json:"annotations,omitempty"`
	Owner       string            `json:"owner"`
}

func stateOf(c *state.Container) ociState {
	// The status is read once: the sentry may exit between two reads.
	status, pid := c.Status(), c.Sentry.PID
	if status == state.Stopped {
		pid = 0 // as runc: a stopped container has no pid
	}
	return ociState{
		OCIVersion:  specs.Version,
		ID:          c.ID,
		PID:         pid,
		Status:      status,
		Bundle:      c.Bundle,
		Rootfs:      c.Rootfs,
		Created:     c.Created,
		Annotations: c.Annotations,
		Owner:       c.Owner,
	}
}
