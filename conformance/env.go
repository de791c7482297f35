package conformance

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"time"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/moat-sandbox/moat/internal/ocirun"
)

// Options configure Prepare.
type Options struct {
	// Programs to run; nil means all of Programs().
	Programs []Program
	// BuildDir keeps the compiled programs; empty means a temporary
	// directory removed by Close.
	BuildDir string
	// Busybox is the static busybox copied into the rootfs for the real
	// program checks; empty means DefaultBusybox, and a missing file
	// leaves those checks skipped.
	Busybox string
	// Timeout bounds each run of a program; zero means DefaultTimeout.
	Timeout time.Duration
	// Filter, if set, selects programs and real program checks by name
	// ("file/read_write", "real/echo").
	Filter *regexp.Regexp
}

// Defaults for Options.
const (
	DefaultBusybox = "/usr/bin/busybox"
	DefaultTimeout = 20 * time.Second
)

// Env is a prepared suite: the programs built, one bundle laid out and a
// state root for runtimes. Its methods run one program or container at a
// time; Close removes everything it created.
type Env struct {
	Programs []Program
	timeout  time.Duration
	filter   *regexp.Regexp
	busybox  bool // the rootfs has /bin/busybox
	tmp      string
	bundle   *bundle
	state    string
	seq      int
}

// Prepare builds the programs and lays out the bundle.
func Prepare(ctx context.Context, opts Options) (*Env, error) {
	progs := opts.Programs
	if progs == nil {
		var err error
		if progs, err = Programs(); err != nil {
			return nil, err
		}
	}
	e := &Env{timeout: opts.Timeout, filter: opts.Filter}
	if e.timeout == 0 {
		e.timeout = DefaultTimeout
	}
	for _, p := range progs {
		if e.selected(p.Name) {
			e.Programs = append(e.Programs, p)
		}
	}
	tmp, err := os.MkdirTemp("", "moat-conformance-")
	if err != nil {
		return nil, err
	}
	e.tmp = tmp
	if err := e.prepare(ctx, opts); err != nil {
		e.Close()
		return nil, err
	}
	return e, nil
}

// prepare fills e.tmp: build, bundle and state root.
func (e *Env) prepare(ctx context.Context, opts Options) error {
	binDir := filepath.Join(e.tmp, "build")
	if opts.BuildDir != "" {
		// Absolute, because gcc runs in the sources' directory.
		var err error
		if binDir, err = filepath.Abs(opts.BuildDir); err != nil {
			return err
		}
	}
	if err := build(ctx, binDir, filepath.Join(e.tmp, "gcc"), e.Programs); err != nil {
		return err
	}
	busybox := opts.Busybox
	if busybox == "" {
		busybox = DefaultBusybox
	}
	if _, err := os.Stat(busybox); err == nil {
		e.busybox = true
	} else {
		busybox = ""
	}
	var err error
	if e.bundle, err = newBundle(filepath.Join(e.tmp, "bundle"), binDir, e.Programs, busybox); err != nil {
		return err
	}
	e.state = filepath.Join(e.tmp, "state")
	return os.Mkdir(e.state, 0o700)
}

// Close removes the bundle, the state root and the temporary build
// directory, after detaching whatever a runtime left mounted there.
func (e *Env) Close() error {
	return ocirun.RemoveAll(e.tmp)
}

func (e *Env) selected(name string) bool {
	return e.filter == nil || e.filter.MatchString(name)
}

// runNative runs a program on the host, in the rootfs directory so that it
// finds its data files under the same relative paths as in the container.
func (e *Env) runNative(ctx context.Context, p Program) Outcome {
	cmd := exec.Command(e.bundle.binaryPath(p), "--native", Hostname)
	cmd.Dir = e.bundle.rootfs
	cmd.Env = []string{"PATH=/usr/bin:/bin"}
	return runCaptured(func(stdio ocirun.Stdio) ocirun.Exit {
		return ocirun.Run(ctx, cmd, stdio, ocirun.Limits{Timeout: e.timeout})
	})
}

// runProgram runs program p (args) in a container of rt with /tmp at
// place: a fresh host directory bind-mounted for PlaceBind, emptied
// afterwards for PlaceRoot (runc writes the bundle's rootfs).
func (e *Env) runProgram(ctx context.Context, rt *Runtime, args []string, p *Program, place string) Outcome {
	spec := containerSpec(args)
	spec.Linux.MaskedPaths, spec.Linux.ReadonlyPaths = p.MaskedPaths, p.ReadonlyPaths
	spec.Linux.Sysctl = p.Sysctl
	if p.Capabilities != nil {
		spec.Process.Capabilities = &specs.LinuxCapabilities{Bounding: p.Capabilities, Permitted: p.Capabilities,
			Effective: p.Capabilities}
	}
	spec.Process.Env = append(spec.Process.Env, "CONFORMANCE_PLACE="+place)
	switch place {
	case PlaceBind:
		dir, err := os.MkdirTemp(e.tmp, "bind-")
		if err == nil {
			err = os.Chmod(dir, 0o1777)
		}
		if err != nil {
			return Outcome{ExitCode: -1, Error: err.Error()}
		}
		defer os.RemoveAll(dir)
		setTmp(spec, &specs.Mount{Destination: "/tmp", Type: "bind", Source: dir, Options: []string{"rbind", "rw", "nosuid", "nodev"}})
	case PlaceRoot:
		spec.Root.Readonly = false
		setTmp(spec, nil)
		defer e.bundle.clearTmp()
	}
	return e.runContainer(ctx, rt, spec)
}

// setTmp replaces the spec's /tmp mount with m (nil: none).
func setTmp(spec *specs.Spec, m *specs.Mount) {
	mounts := spec.Mounts[:0]
	for _, old := range spec.Mounts {
		if old.Destination != "/tmp" {
			mounts = append(mounts, old)
		}
	}
	if m != nil {
		mounts = append(mounts, *m)
	}
	spec.Mounts = mounts
}

// runContainer runs spec in a new container of rt, then deletes it: a
// runtime removes a container that ran to the end by itself, but not one
// that it failed to start or that was killed. When the timeout passes or
// ctx ends, the runtime is asked to kill the container, and its process
// group is killed killGrace later if it has not exited by then.
func (e *Env) runContainer(ctx context.Context, rt *Runtime, spec *specs.Spec) Outcome {
	e.seq++
	id := fmt.Sprintf("moat-conformance-%d-%d", os.Getpid(), e.seq)
	if err := ocirun.WriteSpec(e.bundle.dir, spec); err != nil {
		return Outcome{ExitCode: -1, Error: err.Error()}
	}
	r := rt.At(e.state)
	o := runCaptured(func(stdio ocirun.Stdio) ocirun.Exit {
		return r.Run(ctx, e.bundle.dir, id, stdio, ocirun.Limits{Timeout: e.timeout, Grace: killGrace})
	})
	// Its error is expected: a container that ran to its end is gone.
	r.Delete(id)
	return o
}
