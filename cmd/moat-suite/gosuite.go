package main

import (
	"context"
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

// goSuite is the Go standard library's own tests: each package's test
// binary, built on the host by the machine's Go, run in the container in
// the package's source directory (the tests read testdata/ relative to
// it), one package after another, in -test.short mode.
var goSuite = &suite{
	name: "go", title: "The Go standard library's tests", unit: "package", units: goPackages,
	perTest: 3 * time.Minute, limit: 15 * time.Minute,
	prepare: buildGoTests,
	command: goTestScript,
	spec: func(spec *specs.Spec) {
		// runtime.GOROOT, which tests find their sources and
		// lib/time/zoneinfo.zip by (minbase has no tzdata), is the
		// container's, not the host's.
		spec.Process.Env = append(spec.Process.Env, "GOROOT="+goRoot)
	},
	parse:   parseGoTests,
	about:   aboutGo,
	columns: []Status{Passed, Skipped, Failed, TimedOut, Crashed, NotRun},
}

// goPackages are the packages whose tests exercise a kernel: files and
// directories, processes and signals, sockets on loopback, time, threads
// and their synchronisation, profiling signals, and archives and
// compression over real files. runtime's own tests are left out: they
// take longer than the rest together, and most of them build programs,
// which the container cannot (it has no go command).
var goPackages = []string{
	// Files, paths and descriptors.
	"os", "io", "io/fs", "io/ioutil", "path/filepath", "bufio", "internal/poll",
	// The system call layer.
	"syscall", "internal/syscall/unix",
	// Processes, signals, users.
	"os/exec", "os/signal", "os/user",
	// Sockets, on loopback only.
	"net", "net/http", "net/netip", "net/textproto", "net/rpc", "mime/multipart", "log/syslog",
	// Time, threads, the runtime's view of the system.
	"time", "sync", "sync/atomic", "context", "runtime/debug", "runtime/pprof", "crypto/rand", "testing",
	// Archives and compression, over real files.
	"archive/tar", "archive/zip", "compress/gzip", "compress/flate", "compress/bzip2", "compress/zlib", "compress/lzw",
}

// goRoot is where the container has GOROOT's src and lib trees.
const goRoot = "/usr/local/go"

// goTestsDir is where the container has the test binaries.
const goTestsDir = "/usr/local/moat-suite-go"

// goTestBinary is the file name of pkg's test binary.
func goTestBinary(pkg string) string {
	return strings.ReplaceAll(pkg, "/", "_") + ".test"
}

// buildGoTests builds the test binary of every package into dir with the
// go command on PATH (the build cache makes a second build quick), and
// returns the mounts that bring them, and the sources of that Go's GOROOT,
// into the container, read-only, and that Go's version. cgo is off: the binaries are static,
// and the net and os/user tests use Go's own resolver and /etc/passwd
// reader, whose system calls are the sandbox's, not a libc's.
func buildGoTests(ctx context.Context, dir string, pkgs []string) ([]specs.Mount, string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, "", err
	}
	out, err := exec.CommandContext(ctx, "go", "env", "GOROOT", "GOVERSION").Output()
	if err != nil {
		return nil, "", fmt.Errorf("go env GOROOT GOVERSION: %w", err)
	}
	goroot, version, _ := strings.Cut(strings.TrimSpace(string(out)), "\n")
	for _, pkg := range pkgs {
		cmd := exec.CommandContext(ctx, "go", "test", "-c", "-o", filepath.Join(dir, goTestBinary(pkg)), pkg)
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			return nil, "", fmt.Errorf("go test -c %s: %w\n%s", pkg, err, out)
		}
	}
	ro := []string{"bind", "ro"}
	return []specs.Mount{
		// A tmpfs under the binds, so that their mount points are made
		// in it, not in the shared rootfs.
		{Destination: "/usr/local", Type: "tmpfs", Source: "tmpfs", Options: []string{"nosuid", "nodev", "mode=755", "size=1m"}},
		{Destination: goRoot + "/src", Type: "bind", Source: filepath.Join(goroot, "src"), Options: ro},
		{Destination: goRoot + "/lib", Type: "bind", Source: filepath.Join(goroot, "lib"), Options: ro},
		{Destination: goTestsDir, Type: "bind", Source: dir, Options: ro},
	}, version, nil
}

// goTestScript is the container's command: bash runs each package's test
// binary in the package's directory, -test.short, bounded by perTest
// (the binary's own -test.timeout, which panics with every goroutine's
// stack, and a SIGKILL 30 seconds later should it not end), framing its
// output between goBegin and goEnd lines that carry its exit status.
// -test.v=test2json marks the framework's lines, so that what a test
// prints is not taken for them.
func goTestScript(pkgs []string, perTest time.Duration, extra []string) []string {
	secs := strconv.Itoa(int(perTest.Seconds()))
	script := `t=$1; shift; n=$1; shift; flags=("${@:1:$n}"); shift $n
for p in "$@"; do
	echo "` + goBegin + ` $p"
	if cd "` + goRoot + `/src/$p"; then
		timeout -s KILL $((t + 30)) "` + goTestsDir + `/${p//\//_}.test" -test.short -test.v=test2json -test.timeout=${t}s "${flags[@]}" </dev/null 2>&1
		echo "` + goEnd + ` $p $?"
	else
		echo "` + goEnd + ` $p 127"
	fi
done`
	args := []string{"bash", "-c", script, "moat-suite-go", secs, strconv.Itoa(len(extra))}
	args = append(args, extra...)
	return append(args, pkgs...)
}

func aboutGo(w io.Writer, ref *Run) {
	fmt.Fprintf(w, "Each package's test binary, built on the host (`CGO_ENABLED=0 go test -c`, %s), run in the\n", ref.SuiteVersion)
	fmt.Fprintf(w, "package's directory of GOROOT's src tree, bind-mounted read-only, with a tmpfs TMPDIR; one\n")
	fmt.Fprintf(w, "container per runtime on the suites' Debian rootfs, network namespace with loopback only, as\n")
	fmt.Fprintf(w, "root, no go command inside (tests that build programs skip). Each package:\n")
	fmt.Fprintf(w, "`%s`.\n\n", goCommandLine(ref.Args))
}

// goCommandLine is how a run's script ran each package's test binary.
func goCommandLine(args []string) string {
	if len(args) < 6 {
		return strings.Join(args, " ")
	}
	n, _ := strconv.Atoi(args[5])
	line := []string{"pkg.test", "-test.short", "-test.v=test2json", "-test.timeout=" + args[4] + "s"}
	if 6+n <= len(args) {
		line = append(line, args[6:6+n]...)
	}
	return strings.Join(line, " ")
}
