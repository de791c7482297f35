package ocirun

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// Rootfs is where a bundle made by Spec keeps its root file system,
// relative to the bundle.
const Rootfs = "rootfs"

// Spec is the configuration every caller starts from: args run as root in
// / with env, on the bundle's rootfs read-only, with hostname, in
// namespaces of its own (Namespaces). It has no mounts: each caller names
// all of its own, /proc first (runc needs it).
func Spec(args, env []string, hostname string) *specs.Spec {
	return &specs.Spec{
		Version: specs.Version,
		Process: &specs.Process{
			User: specs.User{UID: 0, GID: 0},
			Args: args,
			Env:  env,
			Cwd:  "/",
		},
		Root:     &specs.Root{Path: Rootfs, Readonly: true},
		Hostname: hostname,
		Linux:    &specs.Linux{Namespaces: Namespaces()},
	}
}

// Namespaces are the namespaces of a container isolated as container
// engines isolate one: pid, mount, IPC, UTS, and a network namespace that
// holds only loopback (runc's equivalent of runsc's --network=none).
func Namespaces() []specs.LinuxNamespace {
	return []specs.LinuxNamespace{
		{Type: specs.PIDNamespace},
		{Type: specs.MountNamespace},
		{Type: specs.IPCNamespace},
		{Type: specs.UTSNamespace},
		{Type: specs.NetworkNamespace},
	}
}

// Proc is the /proc mount.
func Proc(options ...string) specs.Mount {
	return specs.Mount{Destination: "/proc", Type: "proc", Source: "proc", Options: options}
}

// Devpts is /dev/pts as runc's default config mounts it: a devpts
// instance of the container's own, ptmx usable by all.
func Devpts() specs.Mount {
	return specs.Mount{Destination: "/dev/pts", Type: "devpts", Source: "devpts",
		Options: []string{"nosuid", "noexec", "newinstance", "ptmxmode=0666", "mode=0620", "gid=5"}}
}

// Tmpfs is a tmpfs mounted at dest.
func Tmpfs(dest string, options ...string) specs.Mount {
	return specs.Mount{Destination: dest, Type: "tmpfs", Source: "tmpfs", Options: options}
}

// WriteSpec makes spec the config.json of the bundle at dir. It replaces
// the file whole, so that a runtime never reads half of one.
func WriteSpec(dir string, spec *specs.Spec) error {
	data, err := json.MarshalIndent(spec, "", "\t")
	if err != nil {
		return err
	}
	tmp := filepath.Join(dir, "config.json.tmp")
	if err := os.WriteFile(tmp, append(data, '\n'), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(dir, "config.json"))
}

// ReadSpec reads the config.json of the bundle at dir.
func ReadSpec(dir string) (*specs.Spec, error) {
	file := filepath.Join(dir, "config.json")
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	var spec specs.Spec
	if err := json.Unmarshal(data, &spec); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	return &spec, nil
}
