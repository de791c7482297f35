package main

import (
	"context"
	_ "embed"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// kselftestSuite is Linux's own selftests (tools/testing/selftests of
// Debian 12's linux-source-6.1): the families that test system call
// semantics with no hardware, module or host feature a container lacks,
// each program run in its own directory, bounded by the per-test limit,
// its TAP output read case by case.
var kselftestSuite = &suite{
	name: "kselftest", title: "Linux's kernel selftests", unit: "program", units: kselftestPrograms,
	perTest: 45 * time.Second, limit: 12 * time.Minute,
	prepare: buildKselftests,
	command: kselftestScript,
	parse:   parseKselftests,
	about:   aboutKselftest,
	columns: []Status{Passed, Skipped, Failed, TimedOut, Crashed, NotRun},
}

// kselftestPrograms are the programs run, as "family:program", family
// being the directory under tools/testing/selftests. Left out, by family:
// the benchmarks (seccomp_benchmark, sud_benchmark, mq_perf_tests,
// rseq's param_test_benchmark), rseq's run_param_test.sh (hundreds of
// parameter sets, many minutes), timers' destructive tests (the
// Makefile's TEST_GEN_PROGS_EXTENDED: they set the clock) and those that
// measure for minutes (raw_skew, inconsistency-check) or want /dev/rtc
// (rtcpie), prctl's two TSC stress tests (they loop for minutes), memfd's
// fuse and hugetlbfs tests, vm's hugetlb, THP, KSM, userfaultfd stress,
// gup and compaction tests (debugfs, hugepages, or long), net's tests
// that want veth pairs, netdevsim, bpf, tun, AF_PACKET or any address
// beyond loopback (nearly all of its scripts), af_unix's test_unix_oob
// (in runc it waits for a SIGURG until the per-test limit), sync (sw_sync in debugfs),
// and families for hardware or kernel internals (bpf, kvm, ftrace,
// cgroup, cpufreq, drivers, firmware, livepatch, ...).
var kselftestPrograms = []string{
	"capabilities:test_execve",
	"clone3:clone3", "clone3:clone3_clear_sighand", "clone3:clone3_set_tid", "clone3:clone3_cap_checkpoint_restore",
	"core:close_range_test",
	"exec:execveat", "exec:non-regular", "exec:recursion-depth", "exec:null-argv", "exec:binfmt_script.py",
	"exec:load_address.0x1000", "exec:load_address.0x200000", "exec:load_address.0x1000000",
	"exec:load_address.static.0x1000", "exec:load_address.static.0x200000", "exec:load_address.static.0x1000000",
	"filesystems:devpts_pts",
	"futex:run.sh",
	"ipc:msgque",
	"kcmp:kcmp_test",
	"landlock:base_test", "landlock:fs_test", "landlock:ptrace_test",
	"membarrier:membarrier_test_single_thread", "membarrier:membarrier_test_multi_thread",
	"memfd:memfd_test",
	"mincore:mincore_selftest",
	"mount:run_unprivileged_remount.sh", "mount:run_nosymfollow.sh",
	"mount_setattr:mount_setattr_test",
	"move_mount_set_group:move_mount_set_group_test",
	"mqueue:mq_open_tests",
	"net:socket", "net:reuseport_dualstack", "net:reuseaddr_conflict", "net:reuseaddr_ports_exhausted",
	"net:sk_bind_sendto_listen", "net:sk_connect_zero_addr", "net:so_netns_cookie", "net:tcp_inq", "net:tls",
	"net/af_unix:unix_connect", "net/af_unix:diag_uid",
	"nsfs:owner", "nsfs:pidns",
	"openat2:openat2_test", "openat2:resolve_test", "openat2:rename_attack_test",
	"pid_namespace:regression_enomem",
	"pidfd:pidfd_test", "pidfd:pidfd_fdinfo_test", "pidfd:pidfd_open_test", "pidfd:pidfd_poll_test",
	"pidfd:pidfd_wait", "pidfd:pidfd_getfd_test", "pidfd:pidfd_setns_test",
	"prctl:disable-tsc-test",
	"proc:fd-001-lookup", "proc:fd-002-posix-eq", "proc:fd-003-kthread", "proc:proc-loadavg-001",
	"proc:proc-empty-vm", "proc:proc-pid-vm", "proc:proc-self-map-files-001", "proc:proc-self-map-files-002",
	"proc:proc-self-syscall", "proc:proc-self-wchan", "proc:proc-subset-pid", "proc:proc-tid0",
	"proc:proc-uptime-001", "proc:proc-uptime-002", "proc:read", "proc:self", "proc:setns-dcache",
	"proc:setns-sysvipc", "proc:thread-self", "proc:proc-multiple-procfs", "proc:proc-fsconfig-hidepid",
	"ptrace:get_syscall_info", "ptrace:peeksiginfo", "ptrace:vmaccess",
	"rlimits:rlimits-per-userns",
	"rseq:basic_test", "rseq:basic_percpu_ops_test", "rseq:param_test",
	"seccomp:seccomp_bpf",
	"sigaltstack:sas",
	"size:get_size",
	"splice:default_file_splice_read.sh", "splice:short_splice_read.sh",
	"syscall_user_dispatch:sud_test",
	"timens:timens", "timens:timerfd", "timens:timer", "timens:clock_nanosleep", "timens:procfs",
	"timens:exec", "timens:futex",
	"timers:posix_timers", "timers:nanosleep", "timers:nsleep-lat", "timers:set-timer-lat",
	"timers:mqueue-lat", "timers:threadtest",
	"tmpfs:bug-link-o-tmpfile",
	"vDSO:vdso_test_gettimeofday", "vDSO:vdso_test_getcpu", "vDSO:vdso_test_abi",
	"vDSO:vdso_test_clock_getres", "vDSO:vdso_test_correctness", "vDSO:vdso_standalone_test_x86",
	"vm:mremap_test", "vm:mremap_dontunmap", "vm:map_fixed_noreplace", "vm:map_populate",
	"vm:mlock2-tests", "vm:madv_populate", "vm:mrelease_test",
	"x86:single_step_syscall_64", "x86:sysret_ss_attrs_64", "x86:syscall_nt_64", "x86:test_mremap_vdso_64",
	"x86:check_initial_reg_state_64", "x86:sigreturn_64", "x86:iopl_64", "x86:ioperm_64",
	"x86:test_vsyscall_64", "x86:mov_ss_trap_64", "x86:sigtrap_loop_64", "x86:syscall_arg_fault_64",
	"x86:fsgsbase_restore_64", "x86:sigaltstack_64", "x86:fsgsbase_64", "x86:sysret_rip_64",
	"x86:syscall_numbering_64", "x86:corrupt_xstate_header_64", "x86:amx_64",
}

// kselftestPackages are what the build downloads with apt-get: the
// kernel's source, and libcap's and libcap-ng's headers and link-time
// libraries, which capabilities, seccomp and others link with.
var kselftestPackages = []string{"linux-source-6.1", "libcap-dev", "libcap-ng-dev", "libcap-ng0"}

// kselftestDir is where the container has the built selftests tree,
// read-only; the script copies it to kselftestWork, as the tests write
// beside themselves.
const (
	kselftestDir  = "/usr/local/kselftest"
	kselftestWork = "/tmp/kselftest"
)

//go:embed kselftest_build.sh
var kselftestBuildScript string

// buildKselftests downloads kselftestPackages into dir/debs and builds
// the selftests in dir with kselftest_build.sh, unless dir/built says the
// same packages were built there already. It returns the mount of the
// built tree and the source package's version.
func buildKselftests(ctx context.Context, dir string, _ []string) ([]specs.Mount, string, error) {
	debs := filepath.Join(dir, "debs")
	if err := os.MkdirAll(debs, 0o755); err != nil {
		return nil, "", err
	}
	have, _ := filepath.Glob(filepath.Join(debs, "*.deb"))
	if len(have) < len(kselftestPackages) {
		cmd := exec.CommandContext(ctx, "apt-get", append([]string{"download"}, kselftestPackages...)...)
		cmd.Dir = debs
		if out, err := cmd.CombinedOutput(); err != nil {
			return nil, "", fmt.Errorf("apt-get download %s: %w\n%s", strings.Join(kselftestPackages, " "), err, out)
		}
	}
	src, err := filepath.Glob(filepath.Join(debs, "linux-source-6.1_*.deb"))
	if err != nil || len(src) != 1 {
		return nil, "", fmt.Errorf("%s: want one linux-source-6.1 package, have %d", debs, len(src))
	}
	version := strings.TrimSuffix(filepath.Base(src[0]), "_all.deb")
	stamp := filepath.Join(dir, "built")
	if b, err := os.ReadFile(stamp); err != nil || string(b) != version {
		log, err := os.Create(filepath.Join(dir, "build.log"))
		if err != nil {
			return nil, "", err
		}
		defer log.Close()
		fmt.Fprintf(os.Stderr, "moat-suite: building the selftests of %s (log: %s)\n", version, log.Name())
		cmd := exec.CommandContext(ctx, "bash", "-c", kselftestBuildScript, "kselftest_build.sh", dir)
		cmd.Stdout, cmd.Stderr = log, log
		if err := cmd.Run(); err != nil {
			return nil, "", fmt.Errorf("building the selftests (%s): %w", log.Name(), err)
		}
		if err := os.WriteFile(stamp, []byte(version), 0o644); err != nil {
			return nil, "", err
		}
	}
	return []specs.Mount{
		{Destination: "/usr/local", Type: "tmpfs", Source: "tmpfs", Options: []string{"nosuid", "nodev", "mode=755", "size=1m"}},
		{Destination: kselftestDir, Type: "bind", Source: filepath.Join(dir, "linux-source-6.1/tools/testing/selftests"), Options: []string{"bind", "ro"}},
	}, version, nil
}

// kselftestMaxTimeout is the longest a family's settings file may extend
// the per-test limit to (seccomp's 120 s; net's 1500 s and the 0, no
// limit, of rseq and timers are for their long scripts, not run here).
const kselftestMaxTimeout = 120 * time.Second

// kselftestScript is the container's command: bash copies the tree to
// kselftestWork and runs each program in its family's directory, bounded
// by perTest (45 s, kselftest's own default), or by the timeout of the
// family's settings file, as kselftest's runner reads it, when that is
// longer and at most kselftestMaxTimeout (timeout's SIGTERM, then SIGKILL
// 10 seconds later), framing
// its output between goBegin and goEnd lines with its exit status, as
// goTestScript does. A program the build did not make ends 127 with
// "not built". extra flags go to every program.
func kselftestScript(programs []string, perTest time.Duration, extra []string) []string {
	secs := strconv.Itoa(int(perTest.Seconds()))
	script := `t=$1; shift; n=$1; shift; flags=("${@:1:$n}"); shift $n
cp -a ` + kselftestDir + ` ` + kselftestWork + ` || exit 1
for u in "$@"; do
	family=${u%%:*} prog=${u#*:}
	echo "` + goBegin + ` $u"
	cd "` + kselftestWork + `/$family" || { echo "` + goEnd + ` $u 127"; continue; }
	lim=$t s=$(sed -n 's/^timeout=//p' settings 2>/dev/null)
	if [ "${s:-0}" -gt "$t" ] && [ "$s" -le ` + strconv.Itoa(int(kselftestMaxTimeout.Seconds())) + ` ]; then lim=$s; fi
	if [ -x "$prog" ]; then
		timeout -k 10 "$lim" "./$prog" "${flags[@]}" </dev/null 2>&1
		echo "` + goEnd + ` $u $?"
	else
		echo "not built"
		echo "` + goEnd + ` $u 127"
	fi
done`
	args := []string{"bash", "-c", script, "moat-suite-kselftest", secs, strconv.Itoa(len(extra))}
	args = append(args, extra...)
	return append(args, programs...)
}

func aboutKselftest(w io.Writer, ref *Run) {
	secs := "?"
	if len(ref.Args) > 4 {
		secs = ref.Args[4]
	}
	fmt.Fprintf(w, "tools/testing/selftests of Debian 12's %s, built on the host (cmd/moat-suite/kselftest_build.sh:\n", ref.SuiteVersion)
	fmt.Fprintf(w, "gcc, Debian 12's libc, the installed linux-libc-dev headers), dynamic against the suite rootfs's\n")
	fmt.Fprintf(w, "libraries; one container per runtime on the suites' Debian rootfs, network namespace with loopback\n")
	fmt.Fprintf(w, "only, as root with the runtime's default capabilities. Each program runs in its family's directory\n")
	fmt.Fprintf(w, "(a tmpfs copy), `timeout -k 10 %s ./PROGRAM` (or the family's settings timeout, if longer and at most 120 s: seccomp's 120); its TAP lines are counted per test case (`ok`,\n", secs)
	fmt.Fprintf(w, "`not ok`, `# SKIP`). A program passed if it exited 0 (kselftest's KSFT_PASS), skipped if it exited 4\n")
	fmt.Fprintf(w, "(KSFT_SKIP) or every case skipped. Which families are in, and why the rest are out:\n")
	fmt.Fprintf(w, "cmd/moat-suite/kselftest.go.\n\n")
}
