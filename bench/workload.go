package bench

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Kind says how a workload's figure is obtained.
type Kind string

const (
	// Wall workloads are timed from outside: the figure is the wall time of
	// the whole `RUNTIME run`, from exec to exit.
	Wall Kind = "wall"
	// Micro workloads time themselves inside the container and print one
	// line `RESULT <name> <value> <unit>` (workloads/bench.h).
	Micro Kind = "micro"
	// Exec workloads are timed from outside too: the figure is the wall
	// time of one `RUNTIME exec ID ARGV` into a container already running
	// (its process holds it up, Hold); natively, of running ARGV.
	Exec Kind = "exec"
	// Serve workloads measure moat serve over E2B's API (serve.go), under
	// the runtimes that serve it alone.
	Serve Kind = "serve"
	// Density workloads start idle sandboxes side by side and measure
	// what each costs the host (density.go), under OCI runtimes alone.
	Density Kind = "density"
	// Fairness workloads measure a sandbox's throughput alone and beside
	// misbehaving neighbours (fairness.go), under OCI runtimes alone.
	Fairness Kind = "fairness"
)

// Hold is what an Exec workload's container runs meanwhile.
var Hold = []string{"/bin/sleep", "3600"}

// Workload is one thing measured under every runtime. Lower figures are
// better for all of them, so that ratios read the same way everywhere.
type Workload struct {
	Name string
	Kind Kind
	What string // what the figure measures, for the reports
	Unit string
	// Program is the C source workloads/<Program>.c, built static into
	// /bench/<Program>; a Micro workload runs it as
	// `/bench/<Program> ITERATIONS BUDGET_MS`.
	Program string
	// Helpers are further programs of workloads/ that the workload's
	// sandboxes run besides Program, built the same way.
	Helpers    []string
	Iterations int64 // default for a Micro workload
	// Argv is what a Wall workload runs in the container, or what an
	// Exec workload execs into it.
	Argv []string
	// Args follow ITERATIONS and BUDGET_MS on a Micro workload's command
	// line.
	Args []string
	// WritableRoot runs the workload with a writable root file system
	// (moat's overlay), for what it does there; the rest run read-only.
	WritableRoot bool
	// Loaded workloads are measured a second time beside busy processes
	// when the session asks for it (Config.Load, load.go).
	Loaded bool
	// quiet is the name of the workload this one is the loaded pass of
	// (load.go); its program reports under that name.
	quiet string
	// Needs are the paths the workload needs in the rootfs besides its
	// Program; it is skipped, with the first one missing, when a rootfs lacks them.
	Needs []string
	// Project, for a Wall workload, names the working tree it runs in
	// (project.go): made once per session, the containers' working
	// directory.
	Project string
}

// Workloads is every workload moat-bench knows, in report order.
var Workloads = []Workload{
	{
		Name: "run-true", Kind: Wall, Unit: "ms",
		What: "whole-container start-up: create, start, wait for and delete a container whose process is /bin/true",
		Argv: []string{"/bin/true"}, Needs: []string{"/bin/true"},
	},
	{
		Name: "exec-true", Kind: Exec, Unit: "ms",
		What: "exec of /bin/true into a running container, from the runtime's exec to its exit",
		Argv: []string{"/bin/true"}, Needs: []string{"/bin/true", "/bin/sleep"},
	},
	{
		Name: "getppid", Kind: Micro, Unit: "ns/op", Program: "getppid", Iterations: 1_000_000, Loaded: true,
		What: "system call round trip: getppid(2) via syscall()",
	},
	{
		Name: "read-4k", Kind: Micro, Unit: "ns/op", Program: "read-4k", Iterations: 1_000_000, Loaded: true,
		What: "pread(2) of 4 KiB from a cached file",
	},
	{
		Name: "open-close", Kind: Micro, Unit: "ns/op", Program: "open-close", Iterations: 1_000_000, Loaded: true,
		What: "open(2) and close(2) of an existing file",
	},
	{
		Name: "pipe", Kind: Micro, Unit: "ms/GiB", Program: "pipe", Iterations: 1024, Loaded: true,
		What: "1 GiB through a pipe from one process to another, in 64 KiB writes",
	},
	{
		Name: "tcp-loopback", Kind: Micro, Unit: "ms/GiB", Program: "tcp-loopback", Iterations: 1024, Loaded: true,
		What: "1 GiB over a TCP connection on 127.0.0.1 from one process to another, in 64 KiB writes",
	},
	{
		Name: "tcp-connect", Kind: Micro, Unit: "us/op", Program: "tcp-connect", Iterations: 5000, Loaded: true,
		What: "a new TCP connection on 127.0.0.1 to another process: connect, a one-byte request and reply, close",
	},
	{
		Name: "fork-exec", Kind: Micro, Unit: "us/op", Program: "fork-exec", Iterations: 1000, Loaded: true,
		What:  "fork, exec /bin/true and wait for it",
		Needs: []string{"/bin/true"},
	},
	// The file work of an agent's tools, in its workspace (a bind mount of
	// an ext4 directory of the host, as /data) and on the root file system
	// (moat's overlay; the host's directory under runc).
	fileIO("seq-write-bind", "seq-write", dataDir, 1024, "1 GiB written sequentially in 1 MiB blocks, to a bind-mounted host directory"),
	fileIO("seq-read-bind", "seq-read", dataDir, 1024, "1 GiB read sequentially in 1 MiB blocks, from a bind-mounted host directory"),
	fileIO("seq-write-root", "seq-write", rootScratch, 1024, "1 GiB written sequentially in 1 MiB blocks, to the root file system"),
	fileIO("seq-read-root", "seq-read", rootScratch, 1024, "1 GiB read sequentially in 1 MiB blocks, from the root file system"),
	fileIO("rand-read-bind", "rand-read", dataDir, 200_000, "pread(2) of 4 KiB at random page offsets of a 256 MiB file on a bind mount"),
	fileIO("open-stat-bind", "open-stat", dataDir, 100_000, "open, fstat and close of one of 10,000 files on a bind mount"),
	fileIO("stat-bind", "stat", dataDir, 100_000, "stat(2) of one of 10,000 paths on a bind mount"),
	fileIO("open-stat-root", "open-stat", rootScratch, 100_000, "open, fstat and close of one of 10,000 files on the root file system"),
	fileIO("git-status-bind", "git-status", dataDir, 10, "git status in a 5,000-file repository on a bind mount", "/usr/bin/git"),
	fileIO("untar-bind", "untar", dataDir, 3, "tar xf of a 100 MiB archive of 100 files, onto a bind mount", "/bin/tar"),
	fileIO("names-bind", "names", dataDir, 20_000, "mkdir, creat+close, rename, unlink and rmdir, one each, on a bind mount: per five changes of names"),
	{
		Name: "ls", Kind: Wall, Unit: "ms",
		What: "whole-container run of ls -l /usr/bin: an agent's commonest tool call, a directory listed with a stat of each entry",
		Argv: []string{"/bin/ls", "-l", "/usr/bin"}, Needs: []string{"/bin/ls"},
	},
	{
		Name: "python3-pass", Kind: Wall, Unit: "ms",
		What: "whole-container run of python3 -c pass: interpreter start-up, hundreds of file opens and mmaps",
		Argv: []string{"/usr/bin/python3", "-c", "pass"}, Needs: []string{"/usr/bin/python3"},
	},
	{
		Name: "git-status", Kind: Wall, Unit: "ms",
		What: fmt.Sprintf("whole-container run of git status in a clean %d-file repository: an agent's look at its checkout", repoDirs*repoFilesPer),
		Argv: []string{"/usr/bin/git", "status"}, Needs: []string{"/usr/bin/git"}, Project: "repo",
	},
	{
		Name: "pytest", Kind: Wall, Unit: "ms",
		What: fmt.Sprintf("whole-container run of python3 -m pytest -q on a small project (%d modules, %d tests): collection, imports, assertion rewriting",
			pytestModules, pytestModules*(pytestCases+1)),
		Argv: []string{"/usr/bin/python3", "-m", "pytest", "-q"}, Needs: []string{"/usr/bin/python3", "/usr/lib/python3/dist-packages/pytest/__init__.py"},
		Project: "pytest",
	},
	{
		Name: "e2b-create", Kind: Serve, Unit: "ms",
		What: "the create of a sandbox through moat serve as E2B's SDKs call it (POST /v2/sandboxes, to the response's last byte), " +
			"in bursts of 1, 10 and 50 at once, from a warm pool and booted cold",
		// What the sandbox's init runs (internal/e2b).
		Needs: []string{"/bin/sleep"},
	},
	{
		Name: "density", Kind: Density, Unit: "MiB",
		What: "idle sandboxes side by side, each running sleep, started one after another: each one's host memory " +
			"(the PSS of all its host processes, and its memory cgroup's usage) and its create+start time with the others running",
		Argv: Hold, Needs: []string{"/bin/sleep"},
	},
	{
		Name: "noisy-neighbours", Kind: Fairness, Unit: "runs/s", Program: "repeat", Helpers: []string{"neighbour"},
		What: "the start-up of python3 -c pass over and over in one sandbox, alone and beside three sandboxes under linux.resources limits " +
			"running a memory bomb, a fork bomb and a CPU hog: its throughput beside them over its throughput alone",
		Argv: []string{"/usr/bin/python3", "-c", "pass"}, Needs: []string{"/usr/bin/python3", "/bin/sh"},
	},
}

// Where the fileio workloads work: the bind mount every container has at
// /data (newSpec), and a directory of the root file system.
const (
	dataDir     = "/data"
	rootScratch = "/scratch"
)

// fileIO is a workload of workloads/fileio.c in mode on dir.
func fileIO(name, mode, dir string, iterations int64, what string, needs ...string) Workload {
	units := map[string]string{"seq-write": "ms/GiB", "seq-read": "ms/GiB", "rand-read": "ns/op",
		"open-stat": "us/op", "stat": "us/op", "git-status": "ms/op", "untar": "ms/op", "names": "us/op"}
	return Workload{Name: name, Kind: Micro, Unit: units[mode], Program: "fileio", Iterations: iterations,
		What: what, Args: []string{mode, dir, name}, WritableRoot: dir == rootScratch, Needs: needs}
}

// SelectWorkloads returns the workloads named, in table order, or all of them
// when names is empty.
func SelectWorkloads(names []string) ([]Workload, error) {
	if len(names) == 0 {
		return Workloads, nil
	}
	var out []Workload
	for _, w := range Workloads {
		if slices.Contains(names, w.Name) {
			out = append(out, w)
		}
	}
	for _, name := range names {
		if !slices.ContainsFunc(out, func(w Workload) bool { return w.Name == name }) {
			var known []string
			for _, w := range Workloads {
				known = append(known, w.Name)
			}
			return nil, fmt.Errorf("unknown workload %q (known: %s)", name, strings.Join(known, ", "))
		}
	}
	return out, nil
}

// argv is what the container runs for this workload.
func (w Workload) argv(iterations int64, budget time.Duration) []string {
	if w.Kind != Micro {
		return w.Argv
	}
	if iterations <= 0 {
		iterations = w.Iterations
	}
	argv := []string{programPath(w.Program), strconv.FormatInt(iterations, 10), strconv.FormatInt(budget.Milliseconds(), 10)}
	return append(argv, w.Args...)
}

// programs are the workload's programs of workloads/: Program and its
// Helpers.
func (w Workload) programs() []string {
	if w.Program == "" {
		return w.Helpers
	}
	return append([]string{w.Program}, w.Helpers...)
}

// programPath is where a built workload program lives in the rootfs.
func programPath(program string) string {
	return "/bench/" + program
}

// missing returns the first path the workload needs that rootfs lacks, or "".
func (w Workload) missing(rootfs string) (string, error) {
	root, err := os.OpenRoot(rootfs)
	if err != nil {
		return "", err
	}
	defer root.Close()
	var needs []string
	for _, program := range w.programs() {
		needs = append(needs, programPath(program))
	}
	needs = append(needs, w.Needs...)
	for _, p := range needs {
		// Lstat: the entry existing is enough, and a rootfs may hold absolute
		// symlinks (/etc/alternatives) that must not be followed on the host.
		_, err := root.Lstat(strings.TrimPrefix(p, "/"))
		if errors.Is(err, fs.ErrNotExist) {
			return p, nil
		}
		if err != nil {
			return "", err
		}
	}
	return "", nil
}
