package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/moat-sandbox/moat/internal/ocirun"
)

// instance is a runtime ready to run containers of one session.
type instance struct {
	Runtime
	oci    ocirun.Root // the binary at the session's state directory; only for oci
	bundle string
	// command is a command runtime's binary, scratch the directory its
	// runs start in.
	command, scratch string
	// served are the state directories of the moat serve processes the
	// session started with this runtime's binary (serve_server.go).
	served []ocirun.Root
}

// run runs spec once as container id and returns its wall time, from exec of
// the runtime to its exit. out receives the output; it is files, not pipes,
// so that the clock stops when the runtime exits rather than when its last
// descendant closes a pipe. When ctx ends first, the container is deleted
// before run returns.
func (in *instance) run(ctx context.Context, id string, spec *specs.Spec, timeout time.Duration, out *ocirun.Output) (time.Duration, error) {
	if err := out.Reset(); err != nil {
		return 0, err
	}
	var x ocirun.Exit
	switch in.Kind {
	case KindNative:
		x = ocirun.Run(ctx, in.nativeCommand(spec), out.Stdio(), ocirun.Limits{Timeout: timeout})
	case KindCommand:
		x = ocirun.Run(ctx, in.commandLine(spec), out.Stdio(), ocirun.Limits{Timeout: timeout})
	default:
		// Stopped early, the container is deleted, and what is left of
		// the runtime's process group killed at once.
		stop := func() { in.forceDelete(id) }
		x = in.oci.Run(ctx, in.bundle, id, out.Stdio(), ocirun.Limits{Timeout: timeout, Stop: stop})
	}
	if x.StartErr != nil {
		return 0, x.StartErr
	}
	err := x.Err()
	if err != nil || ctx.Err() != nil {
		// A runtime that fails half-way may leave the container created,
		// and a stopped one may have created it after the stop's delete.
		in.forceDelete(id)
	}
	if ctx.Err() != nil {
		return 0, ctx.Err()
	}
	if err != nil {
		return 0, fmt.Errorf("%v%s", err, tail(out.Stderr))
	}
	return x.Took, nil
}

// nativeCommand is the process that runs spec on the host, chrooted into
// the bundle's rootfs.
func (in *instance) nativeCommand(spec *specs.Spec) *exec.Cmd {
	return &exec.Cmd{
		Path: spec.Process.Args[0], Args: spec.Process.Args,
		Env: spec.Process.Env, Dir: spec.Process.Cwd,
		SysProcAttr: &syscall.SysProcAttr{Chroot: filepath.Join(in.bundle, spec.Root.Path)},
	}
}

// commandLine is the process that runs spec's argv under a command
// runtime, on the host's root, in the runtime's scratch directory, which
// stands for the containers' /data: a working directory below /data is
// the same path below scratch.
func (in *instance) commandLine(spec *specs.Spec) *exec.Cmd {
	args := append(append([]string{in.command}, in.Flags()...), spec.Process.Args...)
	dir := in.scratch
	if rel, err := filepath.Rel(dataDir, spec.Process.Cwd); err == nil && rel != "." && !strings.HasPrefix(rel, "..") {
		dir = filepath.Join(in.scratch, rel)
	}
	return &exec.Cmd{Path: in.command, Args: args, Env: spec.Process.Env, Dir: dir}
}

// forceDelete kills and deletes container id if it exists. Its failure is
// expected (the container may be gone already) and is not reported here: the
// sweep at the end of the session finds what is really left.
func (in *instance) forceDelete(id string) {
	if in.Kind == KindOCI {
		in.oci.Delete(id)
	}
}

// sweep deletes every container left in the runtime's state directory and
// returns an error naming those it could not delete.
func (in *instance) sweep() error {
	if in.Kind != KindOCI {
		return nil
	}
	err := in.oci.Sweep()
	for _, root := range in.served {
		err = errors.Join(err, root.Sweep())
	}
	return err
}

// tail returns the end of a run's stderr, to say why it failed.
func tail(f *os.File) string {
	const maxTail = 600
	info, err := f.Stat()
	if err != nil || info.Size() == 0 {
		return ""
	}
	off := max(info.Size()-maxTail, 0)
	buf := make([]byte, info.Size()-off)
	n, _ := f.ReadAt(buf, off)
	lines := strings.Split(strings.TrimSpace(string(buf[:n])), "\n")
	if len(lines) > 3 {
		lines = lines[len(lines)-3:]
	}
	return ": " + strings.Join(lines, " | ")
}
