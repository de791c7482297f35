package main

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// pythonModules are the regression test modules the suite runs: those that
// exercise what agents' code asks of a kernel (files, directories,
// descriptors, sockets on loopback, signals, processes, threads, select,
// poll and epoll, mmap, ptys, time, locale, archives and compression over
// real files) and that need neither the network nor a display. Tests that
// want a resource regrtest names (network, cpu, gui, largefile...) skip,
// since the run enables none (-u is not given). Of the slow packages,
// asyncio, concurrent_futures and one multiprocessing start method
// (forkserver: a server process forking workers that get their
// descriptors over an AF_UNIX socket, the most kernel of the three) are
// in; fork and spawn would double the run for little more.
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
	// Event loops, executors and process pools over all of the above.
	"test_asyncio", "test_concurrent_futures", "test_multiprocessing_forkserver",
	// The system's identity, time and locale.
	"test_time", "test_strftime", "test_locale", "test_pwd", "test_grp", "test_platform",
	"test_getpass", "test_sys", "test_sysconfig", "test_site", "test_uuid", "test_syslog",
	"test_tracemalloc", "test_gc", "test_venv",
}

// pythonSuite is CPython's regression tests, Debian's build of them in
// the suite rootfs: regrtest runs the modules two at a time.
var pythonSuite = &suite{
	name: "python", title: "CPython's regression tests", unit: "module", units: pythonModules,
	perTest: 5 * time.Minute, limit: 35 * time.Minute,
	command: regrtestArgs,
	spec: func(spec *specs.Spec) {
		// Lib/test is read-only: no test may leave bytecode in it.
		spec.Process.Env = append(spec.Process.Env, "PYTHONDONTWRITEBYTECODE=1")
	},
	parse:   parseRegrtest,
	about:   aboutPython,
	columns: []Status{Passed, Skipped, Failed, EnvChanged, TimedOut, Crashed, NotRun},
}

// regrtestJobs is how many worker processes regrtest runs the modules in:
// the machine's two cores.
const regrtestJobs = 2

// ignoredTests are regrtest --ignore patterns, the same for every
// runtime. UDP-Lite: CPython 3.11's test_socket runs its UDPLITE classes
// whenever socket.IPPROTO_UDPLITE is defined (HAVE_SOCKET_UDPLITE is a
// hasattr, not a probe), and moat's netstack has no UDP-Lite: socket()
// answers EPROTONOSUPPORT, as a Linux kernel without it and gVisor do,
// and ~150 cases error in setUp. Left in, they would turn the whole
// module's result into that one known absence and hide the other ~550.
var ignoredTests = []string{"*UDPLITE*"}

// regrtestArgs is the command line of one run: python's regrtest on
// modules, regrtestJobs worker processes, each test module killed after
// perTest, the ignoredTests patterns, extra flags before the modules.
// By default -v is not given: a line per module is what is parsed.
func regrtestArgs(modules []string, perTest time.Duration, extra []string) []string {
	args := []string{"python3", "-m", "test", "-j", strconv.Itoa(regrtestJobs),
		"--timeout", strconv.Itoa(int(perTest.Seconds()))}
	for _, p := range ignoredTests {
		args = append(args, "--ignore", p)
	}
	args = append(args, extra...)
	return append(args, modules...)
}

func aboutPython(w io.Writer, ref *Run) {
	fmt.Fprintf(w, "Debian's libpython3.11-testsuite in the integration tests' Debian rootfs, one container per\n")
	fmt.Fprintf(w, "runtime on the same bundle, network namespace with loopback only, no regrtest resources\n")
	fmt.Fprintf(w, "enabled (tests that want the network, a display or much CPU skip), as root.\n")
	fmt.Fprintf(w, "Command: `%s`.\n", strings.Join(shortArgs(ref.Args, "test_"), " "))
	if slices.Contains(ref.Args, "*UDPLITE*") {
		fmt.Fprintf(w, "UDP-Lite's cases (`--ignore '*UDPLITE*'`) are left out in every runtime: moat's netstack has\n")
		fmt.Fprintf(w, "no UDP-Lite and answers EPROTONOSUPPORT, as a kernel without it does, and CPython 3.11 runs\n")
		fmt.Fprintf(w, "them whenever the constant exists (cmd/moat-suite's ignoredTests says more).\n")
	}
	fmt.Fprintln(w)
}
