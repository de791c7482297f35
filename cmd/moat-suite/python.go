package main

import (
	"fmt"
	"strconv"
	"time"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/moat-sandbox/moat/internal/ocirun"
)

// suitePackages are what the suite's rootfs adds to the Debian one:
// CPython's regression tests, Lib/test of the python3.11 that rootfs holds,
// and netbase's /etc/services and /etc/protocols, which test_socket's
// getservbyname and getprotobyname checks read (debootstrap's minbase has
// neither: they failed under every runtime).
var suitePackages = []string{"libpython3.11-testsuite", "netbase"}

// pythonModules are the regression test modules the suite runs: those that
// exercise what agents' code asks of a kernel (files, directories,
// descriptors, sockets on loopback, signals, processes, threads, select,
// poll and epoll, mmap, ptys, time, locale, archives and compression over
// real files) and that need neither the network nor a display. Tests that
// want a resource regrtest names (network, cpu, gui, largefile...) skip,
// since the run enables none (-u is not given). The slowest packages
// (asyncio, multiprocessing, concurrent_futures) are left out, to keep
// the whole run within a sitting.
var pythonModules = []string{
	// Files, paths and descriptors.
	"test_os", "test_posix", "test_posixpath", "test_genericpath", "test_stat", "test_shutil",
	"test_tempfile", "test_fileio", "test_file", "test_io", "test_memoryio", "test_bufio",
	"test_fcntl", "test_glob", "test_pathlib", "test_fileinput", "test_filecmp", "test_largefile",
	"test_mmap", "test_dbm", "test_dbm_dumb", "test_mailbox", "test_compileall", "test_py_compile",
	"test_zipimport", "test_unicode_file", "test_unicode_file_functions",
	// Archives and compression, over real files.
	"test_zipfile", "test_tarfile", "test_gzip", "test_zlib", "test_bz2", "test_lzma",
	// Processes and signals.
	"test_subprocess", "test_signal", "test_eintr", "test_wait3", "test_wait4", "test_fork1",
	"test_popen", "test_pty", "test_openpty", "test_ioctl", "test_resource", "test_faulthandler",
	"test_cmd_line", "test_cmd_line_script", "test_utf8_mode",
	// Threads.
	"test_threading", "test_thread", "test_threadsignals", "test_threading_local", "test_queue", "test_sched",
	// Readiness: select, poll, epoll.
	"test_select", "test_selectors", "test_epoll", "test_poll",
	// Sockets, on loopback only.
	"test_socket", "test_socketserver", "test_asyncore", "test_asynchat", "test_logging",
	"test_httpservers", "test_urllib2_localnet", "test_xmlrpc", "test_ftplib", "test_smtplib",
	"test_telnetlib", "test_ssl",
	// The system's identity, time and locale.
	"test_time", "test_strftime", "test_locale", "test_pwd", "test_grp", "test_platform",
	"test_getpass", "test_sys", "test_sysconfig", "test_site", "test_uuid", "test_syslog",
	"test_tracemalloc", "test_gc", "test_venv",
}

// regrtestArgs is the command line of one run: python's regrtest on
// modules, jobs worker processes, each test module killed after
// perTest, extra flags before the modules. By default -v is not given: a
// line per module is what is parsed.
func regrtestArgs(modules []string, jobs int, perTest time.Duration, extra ...string) []string {
	args := []string{"python3", "-m", "test", "-j", strconv.Itoa(jobs),
		"--timeout", strconv.Itoa(int(perTest.Seconds()))}
	args = append(args, extra...)
	return append(args, modules...)
}

// suiteSpec is the container of a run: the suite's rootfs read-only, a
// writable /tmp where regrtest makes its working directories, /dev/shm for
// the POSIX semaphores and shared memory the tests make, root in fresh
// namespaces whose network holds only loopback (ocirun.Namespaces): no
// test can reach out. hosts is bind-mounted at /etc/hosts, as container
// engines mount theirs: debootstrap leaves none, and without one
// "localhost", which the socket tests bind to, does not resolve.
func suiteSpec(rootfs, hosts string, args []string) *specs.Spec {
	spec := ocirun.Spec(args, []string{
		"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
		"HOME=/root", "LANG=C.UTF-8",
		// Lib/test is read-only: no test may leave bytecode in it.
		"PYTHONDONTWRITEBYTECODE=1",
	}, "moat-suite")
	spec.Root.Path = rootfs
	spec.Process.Cwd = "/tmp"
	spec.Mounts = []specs.Mount{
		ocirun.Proc(),
		ocirun.Tmpfs("/dev", "nosuid", "mode=755", "size=1m"),
		ocirun.Devpts(),
		{Destination: "/dev/shm", Type: "tmpfs", Source: "shm", Options: []string{"nosuid", "nodev", "mode=1777", "size=64m"}},
		ocirun.Tmpfs("/tmp", "nosuid", "nodev", "mode=1777", "size=1g"),
		{Destination: "/etc/hosts", Type: "bind", Source: hosts, Options: []string{"bind", "ro"}},
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
func containerID(runtime string, pid int) string {
	return fmt.Sprintf("moat-suite-python-%s-%d", runtime, pid)
}
