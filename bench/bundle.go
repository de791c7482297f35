package bench

import (
	"encoding/json"
	"os"
	"path/filepath"

	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// hostname is what every container is called, so that a workload sees the
// same uname in all runtimes.
const hostname = "moat-bench"

// pathEnv is the PATH of every workload process, native or not.
const pathEnv = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// newSpec returns the OCI configuration every runtime gets for argv: what
// podman would ask for a plain `run --network=none --read-only`, so that each
// runtime pays for the isolation users actually get from it.
func newSpec(argv []string) *specs.Spec {
	return &specs.Spec{
		Version: specs.Version,
		Process: &specs.Process{
			Terminal:        false,
			User:            specs.User{UID: 0, GID: 0},
			Args:            argv,
			Env:             []string{pathEnv, "HOME=/root"},
			Cwd:             "/",
			NoNewPrivileges: true,
		},
		Root:     &specs.Root{Path: "rootfs", Readonly: true},
		Hostname: hostname,
		Mounts: []specs.Mount{
			{Destination: "/proc", Type: "proc", Source: "proc", Options: []string{"nosuid", "noexec", "nodev"}},
			{Destination: "/dev", Type: "tmpfs", Source: "tmpfs", Options: []string{"nosuid", "strictatime", "mode=755", "size=65536k"}},
			{Destination: "/sys", Type: "sysfs", Source: "sysfs", Options: []string{"nosuid", "noexec", "nodev", "ro"}},
			// The root is read-only; programs that need scratch space (python
			// caches, compilers) get it here, in memory.
			{Destination: "/tmp", Type: "tmpfs", Source: "tmpfs", Options: []string{"nosuid", "nodev", "mode=1777"}},
		},
		Linux: &specs.Linux{
			Namespaces: []specs.LinuxNamespace{
				{Type: specs.PIDNamespace},
				{Type: specs.IPCNamespace},
				{Type: specs.UTSNamespace},
				{Type: specs.MountNamespace},
				// A network namespace with only loopback: runc's equivalent
				// of the --network=none the gVisor runtimes are given.
				{Type: specs.NetworkNamespace},
			},
			MaskedPaths:   []string{"/proc/kcore", "/proc/keys", "/proc/timer_list", "/sys/firmware"},
			ReadonlyPaths: []string{"/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger"},
		},
	}
}

// writeSpec writes spec as the config.json of bundle.
func writeSpec(bundle string, spec *specs.Spec) error {
	data, err := json.MarshalIndent(spec, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(bundle, "config.json"), data, 0o644)
}
