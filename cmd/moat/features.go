package main

import (
	"encoding/json"
	"os"
	"slices"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"github.com/opencontainers/runtime-spec/specs-go/features"

	"github.com/moat-sandbox/moat/sentry/boot"
)

var featuresCommand = &command{
	name:    "features",
	args:    "",
	minArgs: 0, maxArgs: 0,
	summary: "print what moat supports of the runtime spec, as JSON",
	detail: `
The JSON of runc's features command (the runtime-spec's features document),
listing what moat honours: the mount options it applies, the namespaces a
config may ask for (each is the sandbox's own, made by the sentry), every
capability the sentry knows. No hooks are run, and no seccomp, AppArmor or
SELinux profile is applied: the guest's system calls never reach the host.`,
	setup: func(o *options) func(*globalOptions, []string) error {
		return func(g *globalOptions, args []string) error {
			enc := json.NewEncoder(os.Stdout)
			enc.SetIndent("", "    ")
			return enc.Encode(moatFeatures())
		}
	},
}

// mountOptions are the options the sentry applies (sentry/boot's
// mountFlags) or accepts with no effect in a tree no one else sees.
var mountOptions = []string{"async", "atime", "bind", "defaults", "dev", "diratime", "dirsync", "exec",
	"lazytime", "mand", "noatime", "nodev", "nodiratime", "noexec", "nolazytime", "nomand", "norelatime",
	"nostrictatime", "nosuid", "private", "rbind", "relatime", "rprivate", "rshared", "rslave", "runbindable",
	"ro", "rw", "shared", "slave", "strictatime", "suid", "sync", "tmpcopyup", "unbindable"}

func moatFeatures() features.Features {
	no, yes := false, true
	caps := make([]string, 0, len(boot.CapNames))
	for _, c := range boot.CapNames {
		caps = append(caps, "CAP_"+c)
	}
	opts := slices.Clone(mountOptions)
	slices.Sort(opts)
	return features.Features{
		OCIVersionMin: "1.0.0",
		OCIVersionMax: specs.Version,
		Hooks:         []string{"prestart", "createRuntime", "createContainer", "poststart", "poststop"},
		MountOptions:  opts,
		Linux: &features.Linux{
			Namespaces:   []string{"cgroup", "ipc", "mount", "network", "pid", "user", "uts"},
			Capabilities: caps,
			// The sandbox's host cgroup (internal/cgroups); with
			// --systemd-cgroup moat makes the unit's cgroup itself.
			Cgroup:   &features.Cgroup{V1: &yes, V2: &yes, Systemd: &yes, SystemdUser: &no},
			Seccomp:  &features.Seccomp{Enabled: &no},
			Apparmor: &features.Apparmor{Enabled: &no},
			Selinux:  &features.Selinux{Enabled: &no},
		},
		Annotations: map[string]string{
			"org.opencontainers.runc.checkpoint.enabled": "false",
			"dev.moat.version":                           version,
			"dev.moat.sandbox":                           "user-space kernel (systrap)",
		},
	}
}
