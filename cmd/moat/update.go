package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/moat-sandbox/moat/internal/cgroups"
	"github.com/moat-sandbox/moat/internal/control"
	"github.com/moat-sandbox/moat/internal/state"
)

var updateCommand = &command{
	name:    "update",
	args:    "<container-id>",
	minArgs: 1, maxArgs: 1,
	summary: "change a container's resource limits",
	detail: `
The limits come from --resources (a file, or - for stdin, holding the JSON of
config.json's linux.resources) or from the flags, as runc takes them. moat
writes them into the sandbox's host cgroup (the memory limit with the
sentry's margin above it), hands them to the sentry and records them in the
container's state, where 'moat events' reports the memory and pids limits.`,
	setup: func(o *options) func(*globalOptions, []string) error {
		var u updateOptions
		o.String(&u.resources, "resources,r", "FILE", "", "the new resources as JSON, or - for stdin")
		for _, f := range updateFlags {
			o.String(new(string), f, "VALUE", "", "as runc's update --"+f)
		}
		return func(g *globalOptions, args []string) error {
			u.flags = make(map[string]string)
			o.fs.Visit(func(f *flag.Flag) {
				if f.Name != "resources" && f.Name != "r" {
					u.flags[f.Name] = f.Value.String()
				}
			})
			return updateContainer(g, args[0], u)
		}
	},
}

// updateFlags are runc's update flags that moat takes.
var updateFlags = []string{"memory", "memory-swap", "memory-reservation", "kernel-memory", "kernel-memory-tcp",
	"cpu-share", "cpu-quota", "cpu-period", "cpu-rt-period", "cpu-rt-runtime", "cpuset-cpus", "cpuset-mems",
	"pids-limit", "blkio-weight", "l3-cache-schema", "mem-bw-schema"}

type updateOptions struct {
	resources string
	flags     map[string]string
}

func updateContainer(g *globalOptions, id string, u updateOptions) error {
	dir, c, err := openContainer(g, id)
	if err != nil {
		return err
	}
	defer dir.Close()
	if st := c.Status(); st == state.Stopped {
		return fmt.Errorf("container not running")
	}
	r := &specs.LinuxResources{}
	if c.Resources != nil {
		r = c.Resources
	}
	if u.resources != "" {
		var data []byte
		if u.resources == "-" {
			data, err = io.ReadAll(os.Stdin)
		} else {
			data, err = os.ReadFile(u.resources)
		}
		if err != nil {
			return fmt.Errorf("resources: %w", err)
		}
		r = &specs.LinuxResources{}
		if err := json.Unmarshal(data, r); err != nil {
			return fmt.Errorf("resources: %s: %w", u.resources, err)
		}
	}
	if err := applyUpdateFlags(r, u.flags); err != nil {
		return err
	}
	if err := cgroups.Validate(r, cgroups.OnlineCPUs(), cgroups.OnlineMems()); err != nil {
		return err
	}
	// The host cgroup first: a limit the kernel refuses there (a memory
	// limit below what the sandbox already uses) changes nothing.
	if err := c.Cgroup.Apply(r); err != nil {
		return fmt.Errorf("update container %s: %w", id, err)
	}
	// The sentry of a pod holds its limits for the whole pod: a
	// container of it keeps its own in its record and its cgroup (which
	// holds its gofer) only.
	if c.Pod == "" {
		if err := control.Call(dir.ControlSocket(), control.Request{Op: control.OpUpdate, Resources: r}, controlTimeout); err != nil {
			return fmt.Errorf("update container %s: %w", id, err)
		}
	}
	c.Resources = r
	return dir.Save(c)
}

// applyUpdateFlags sets what runc's update flags set; a size may carry
// a k, m or g suffix, as runc's units parse it.
func applyUpdateFlags(r *specs.LinuxResources, flags map[string]string) error {
	mem := func() *specs.LinuxMemory {
		if r.Memory == nil {
			r.Memory = &specs.LinuxMemory{}
		}
		return r.Memory
	}
	cpu := func() *specs.LinuxCPU {
		if r.CPU == nil {
			r.CPU = &specs.LinuxCPU{}
		}
		return r.CPU
	}
	for name, v := range flags {
		var n int64
		var err error
		switch name {
		case "cpuset-cpus":
			cpu().Cpus = v
			continue
		case "cpuset-mems":
			cpu().Mems = v
			continue
		case "l3-cache-schema", "mem-bw-schema":
			continue // Intel RDT: nothing of it in a sandbox
		case "memory", "memory-swap", "memory-reservation", "kernel-memory", "kernel-memory-tcp":
			n, err = parseSize(v)
		default:
			n, err = strconv.ParseInt(v, 10, 64)
		}
		if err != nil {
			return fmt.Errorf("invalid value for --%s: %q", name, v)
		}
		switch name {
		case "memory":
			mem().Limit = &n
		case "memory-swap":
			mem().Swap = &n
		case "memory-reservation":
			mem().Reservation = &n
		case "kernel-memory", "kernel-memory-tcp":
		case "cpu-share":
			s := uint64(n)
			cpu().Shares = &s
		case "cpu-quota":
			cpu().Quota = &n
		case "cpu-period":
			p := uint64(n)
			cpu().Period = &p
		case "cpu-rt-period":
			p := uint64(n)
			cpu().RealtimePeriod = &p
		case "cpu-rt-runtime":
			cpu().RealtimeRuntime = &n
		case "pids-limit":
			r.Pids = &specs.LinuxPids{Limit: &n}
		case "blkio-weight":
			w := uint16(n)
			r.BlockIO = &specs.LinuxBlockIO{Weight: &w}
		}
	}
	return nil
}
