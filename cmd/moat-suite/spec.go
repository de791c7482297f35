package main

import (
	"fmt"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/moat-sandbox/moat/internal/ocirun"
)

// suitePackages are what the suites' rootfs adds to the Debian one:
// CPython's regression tests, Lib/test of the python3.11 that rootfs holds,
// and netbase's /etc/services and /etc/protocols, which test_socket's
// getservbyname and getprotobyname checks and Go's net tests read
// (debootstrap's minbase has neither: they failed under every runtime).
var suitePackages = []string{"libpython3.11-testsuite", "netbase"}

// containerSpec is the container of a run of s: the suite rootfs
// read-only, a writable /tmp where the tests make their working
// directories, /dev/shm for the POSIX semaphores and shared memory they
// make, root in fresh namespaces whose network holds only loopback
// (ocirun.Namespaces): no test can reach out. hosts is bind-mounted at
// /etc/hosts, as container engines mount theirs: debootstrap leaves none,
// and without one "localhost", which socket tests bind to, does not
// resolve. The suite's own mounts come after these, and s.spec adds its
// environment.
func containerSpec(s *suite, rootfs, hosts string, args []string, own []specs.Mount) *specs.Spec {
	spec := ocirun.Spec(args, []string{
		"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
		"HOME=/root", "LANG=C.UTF-8", "TMPDIR=/tmp",
	}, "moat-suite")
	spec.Root.Path = rootfs
	spec.Process.Cwd = "/tmp"
	spec.Mounts = append([]specs.Mount{
		ocirun.Proc(),
		ocirun.Tmpfs("/dev", "nosuid", "mode=755", "size=1m"),
		ocirun.Devpts(),
		{Destination: "/dev/shm", Type: "tmpfs", Source: "shm", Options: []string{"nosuid", "nodev", "mode=1777", "size=64m"}},
		ocirun.Tmpfs("/tmp", "nosuid", "nodev", "mode=1777", "size=1g"),
		{Destination: "/etc/hosts", Type: "bind", Source: hosts, Options: []string{"bind", "ro"}},
	}, own...)
	if s.spec != nil {
		s.spec(spec)
	}
	return spec
}

// hostsFile is the /etc/hosts of the container, as Docker writes one:
// loopback's names, and the hostname on loopback too.
const hostsFile = `127.0.0.1	localhost
::1	localhost ip6-localhost ip6-loopback
127.0.1.1	moat-suite
`

// containerID is the id of one run; the pid keeps two runs of the tool
// apart, since runc names its cgroups, which are machine-wide, by id.
func containerID(s *suite, runtime string, pid int) string {
	return fmt.Sprintf("moat-suite-%s-%s-%d", s.name, runtime, pid)
}
