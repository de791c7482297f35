package bench

import (
	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/moat-sandbox/moat/internal/ocirun"
)

// hostname is what every container is called, so that a workload sees the
// same uname in all runtimes.
const hostname = "moat-bench"

// pathEnv is the PATH of every workload process, native or not.
const pathEnv = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// newSpec returns the OCI configuration every runtime gets for argv: what
// podman would ask for a plain `run --network=none --read-only`, so that each
// runtime pays for the isolation users actually get from it. The network
// namespace, with only loopback in it, is runc's equivalent of the
// --network=none the gVisor runtimes are given.
// data is the host directory bind-mounted at /data (dataDir), the
// workspace of the file workloads. A workload with writableRoot gets a
// writable root file system.
func newSpec(argv []string, data string, writableRoot bool) *specs.Spec {
	spec := ocirun.Spec(argv, []string{pathEnv, "HOME=/root"}, hostname)
	spec.Process.NoNewPrivileges = true
	spec.Root.Readonly = !writableRoot
	spec.Mounts = []specs.Mount{
		ocirun.Proc("nosuid", "noexec", "nodev"),
		ocirun.Tmpfs("/dev", "nosuid", "strictatime", "mode=755", "size=65536k"),
		{Destination: "/sys", Type: "sysfs", Source: "sysfs", Options: []string{"nosuid", "noexec", "nodev", "ro"}},
		// The root is read-only; programs that need scratch space (python
		// caches, compilers) get it here, in memory.
		ocirun.Tmpfs("/tmp", "nosuid", "nodev", "mode=1777"),
		{Destination: dataDir, Type: "bind", Source: data, Options: []string{"rbind", "rw"}},
	}
	spec.Linux.MaskedPaths = []string{"/proc/kcore", "/proc/keys", "/proc/timer_list", "/sys/firmware"}
	spec.Linux.ReadonlyPaths = []string{"/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger"}
	return spec
}
