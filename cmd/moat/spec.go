package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/moat-sandbox/moat/internal/bundle"
	specs "github.com/opencontainers/runtime-spec/specs-go"
)

var specCommand = &command{
	name:    "spec",
	args:    "",
	minArgs: 0, maxArgs: 0,
	summary: "write a starting config.json into a bundle",
	detail: `
The config runs "sh" with a terminal in the bundle's "rootfs" directory, read
only, with the mounts and namespaces runc's default config has. Edit it before
use: process.args is the program, and with "terminal": true create and run -d
need --console-socket. An existing config.json is never overwritten.`,
	setup: func(o *options) func(*globalOptions, []string) error {
		bundleDir := "."
		o.String(&bundleDir, "bundle,b", "DIR", ".", "the bundle directory to write config.json into")
		return func(g *globalOptions, args []string) error {
			return writeDefaultSpec(filepath.Join(bundleDir, bundle.ConfigName))
		}
	},
}

func writeDefaultSpec(path string) error {
	data, err := json.MarshalIndent(defaultSpec(), "", "\t")
	if err != nil {
		return fmt.Errorf("encode default config: %w", err)
	}
	// O_EXCL: refusing to overwrite must not race with another writer.
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o666)
	if errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("%s exists: remove it first", path)
	}
	if err != nil {
		return fmt.Errorf("write config: %w", err)
	}
	_, err = f.Write(data)
	if closeErr := f.Close(); err == nil {
		err = closeErr
	}
	if err != nil {
		os.Remove(path)
		return fmt.Errorf("write config: %w", err)
	}
	return nil
}

// defaultSpec is runc's default config with moat's name and spec version.
func defaultSpec() *specs.Spec {
	caps := []string{"CAP_AUDIT_WRITE", "CAP_KILL", "CAP_NET_BIND_SERVICE"}
	return &specs.Spec{
		Version: specs.Version,
		Process: &specs.Process{
			Terminal: true,
			User:     specs.User{UID: 0, GID: 0},
			Args:     []string{"sh"},
			Env:      []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "TERM=xterm"},
			Cwd:      "/",
			Capabilities: &specs.LinuxCapabilities{
				Bounding: caps, Effective: caps, Permitted: caps, Ambient: caps,
			},
			Rlimits:         []specs.POSIXRlimit{{Type: "RLIMIT_NOFILE", Hard: 1024, Soft: 1024}},
			NoNewPrivileges: true,
		},
		Root:     &specs.Root{Path: "rootfs", Readonly: true},
		Hostname: "moat",
		Mounts: []specs.Mount{
			{Destination: "/proc", Type: "proc", Source: "proc"},
			{Destination: "/dev", Type: "tmpfs", Source: "tmpfs", Options: []string{"nosuid", "strictatime", "mode=755", "size=65536k"}},
			{Destination: "/dev/pts", Type: "devpts", Source: "devpts", Options: []string{"nosuid", "noexec", "newinstance", "ptmxmode=0666", "mode=0620", "gid=5"}},
			{Destination: "/dev/shm", Type: "tmpfs", Source: "shm", Options: []string{"nosuid", "noexec", "nodev", "mode=1777", "size=65536k"}},
			{Destination: "/dev/mqueue", Type: "mqueue", Source: "mqueue", Options: []string{"nosuid", "noexec", "nodev"}},
			{Destination: "/sys", Type: "sysfs", Source: "sysfs", Options: []string{"nosuid", "noexec", "nodev", "ro"}},
			{Destination: "/sys/fs/cgroup", Type: "cgroup", Source: "cgroup", Options: []string{"nosuid", "noexec", "nodev", "relatime", "ro"}},
		},
		Linux: &specs.Linux{
			Resources: &specs.LinuxResources{
				Devices: []specs.LinuxDeviceCgroup{{Allow: false, Access: "rwm"}},
			},
			Namespaces: []specs.LinuxNamespace{
				{Type: specs.PIDNamespace}, {Type: specs.NetworkNamespace}, {Type: specs.IPCNamespace},
				{Type: specs.UTSNamespace}, {Type: specs.MountNamespace},
			},
			MaskedPaths: []string{
				"/proc/acpi", "/proc/asound", "/proc/kcore", "/proc/keys", "/proc/latency_stats",
				"/proc/timer_list", "/proc/timer_stats", "/proc/sched_debug", "/sys/firmware", "/proc/scsi",
			},
			ReadonlyPaths: []string{"/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger"},
		},
	}
}
