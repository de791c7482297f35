package main

import (
	"errors"
	"os"
	"os/exec"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/moat-sandbox/moat/internal/cgroups"
	"github.com/moat-sandbox/moat/internal/confine"
)

// cgroupInner checks linux.cgroupsPath and linux.resources before
// anything is made, and returns the cgroup's path in each hierarchy
// (cgroups.Inner).
func cgroupInner(g *globalOptions, id string, linux *specs.Linux) (string, error) {
	var path string
	var r *specs.LinuxResources
	if linux != nil {
		path, r = linux.CgroupsPath, linux.Resources
	}
	inner, err := cgroups.Inner(path, g.systemdCgroup, id)
	if err != nil {
		return "", err
	}
	return inner, cgroups.Validate(r, cgroups.OnlineCPUs(), cgroups.OnlineMems())
}

// makeCgroup makes the container's cgroup with its limits, for the
// sentry, its stubs and the gofer to start in. A caller other than root
// usually may not make one: then the sandbox runs without, as runc's
// rootless containers do, unless the config asks for limits, which only a
// cgroup could hold the sandbox's processes to.
func makeCgroup(g *globalOptions, inner string, linux *specs.Linux) (*cgroups.Cgroup, error) {
	var r *specs.LinuxResources
	if linux != nil {
		r = linux.Resources
	}
	cg, err := cgroups.Create(cgroups.Root, inner, r)
	if err != nil && os.Geteuid() != 0 && errors.Is(err, os.ErrPermission) && !asksLimits(r) {
		g.log.debugf("no cgroup for the sandbox: %v", err)
		return nil, nil
	}
	return cg, err
}

// asksLimits reports whether r sets any limit a cgroup would enforce.
func asksLimits(r *specs.LinuxResources) bool {
	return r != nil && (r.Memory != nil || r.CPU != nil || r.Pids != nil || r.BlockIO != nil ||
		len(r.HugepageLimits) > 0 || len(r.Unified) > 0)
}

// startIn starts cmd in cg, or plainly when the sandbox has no cgroup.
func startIn(cg *cgroups.Cgroup, cmd *exec.Cmd) error {
	if cg == nil {
		return cmd.Start()
	}
	return cg.Start(cmd)
}

// startConfined is startIn for a process that confines itself in a new
// user namespace (the sentry, the gofer, moat usernet) and keeps the
// capabilities keep: it starts through capdrop, which empties the
// bounding set but for what confining needs before moat's runtime starts
// its threads (confine.ThroughCapdrop).
func startConfined(cg *cgroups.Cgroup, cmd *exec.Cmd, keep uint64) error {
	if !confineFully {
		return startIn(cg, cmd)
	}
	if err := confine.ThroughCapdrop(cmd, keep); err != nil {
		return err
	}
	return startIn(cg, cmd)
}
