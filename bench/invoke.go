package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// instance is a runtime ready to run containers of one session.
type instance struct {
	Runtime
	path   string // resolved binary; "" for native
	state  string // the --root directory, private to this runtime and session
	bundle string
}

// cleanupTimeout bounds each delete or list a clean-up runs: a wedged runtime
// must not keep moat-bench from exiting after Ctrl-C.
const cleanupTimeout = 30 * time.Second

// exit is how and when a runtime process ended.
type exit struct {
	err error
	at  time.Time
}

// run runs spec once as container id and returns its wall time, from exec of
// the runtime to its exit. stdout and stderr receive the output; they are
// files, not pipes, so that the clock stops when the runtime exits rather
// than when its last descendant closes a pipe. When ctx ends first, the
// container is killed and deleted before run returns.
func (in *instance) run(ctx context.Context, id string, spec *specs.Spec, timeout time.Duration, stdout, stderr *os.File) (time.Duration, error) {
	for _, f := range []*os.File{stdout, stderr} {
		if err := f.Truncate(0); err != nil {
			return 0, err
		}
		if _, err := f.Seek(0, io.SeekStart); err != nil {
			return 0, err
		}
	}
	cmd := in.command(id, spec)
	cmd.Stdout, cmd.Stderr = stdout, stderr
	exited := make(chan exit, 1)
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return 0, err
	}
	go func() {
		err := cmd.Wait()
		exited <- exit{err, time.Now()}
	}()
	limit := time.NewTimer(timeout)
	defer limit.Stop()
	select {
	case e := <-exited:
		if e.err != nil {
			// A runtime that fails half-way may leave the container created.
			in.forceDelete(id)
			return 0, fmt.Errorf("%v%s", e.err, tail(stderr))
		}
		return e.at.Sub(start), nil
	case <-ctx.Done():
		in.abort(id, cmd, exited)
		return 0, ctx.Err()
	case <-limit.C:
		in.abort(id, cmd, exited)
		return 0, fmt.Errorf("timed out after %v%s", timeout, tail(stderr))
	}
}

// command is the process that runs spec as container id.
func (in *instance) command(id string, spec *specs.Spec) *exec.Cmd {
	// A process group of its own: the terminal's Ctrl-C then reaches
	// moat-bench alone, which cleans up in order instead of racing runtimes
	// that each handle SIGINT their own way.
	attr := &syscall.SysProcAttr{Setpgid: true}
	if in.Kind == KindNative {
		attr.Chroot = filepath.Join(in.bundle, spec.Root.Path)
		return &exec.Cmd{
			Path: spec.Process.Args[0], Args: spec.Process.Args,
			Env: spec.Process.Env, Dir: spec.Process.Cwd, SysProcAttr: attr,
		}
	}
	cmd := exec.Command(in.path, in.args("run", "--bundle", in.bundle, id)...)
	cmd.SysProcAttr = attr
	return cmd
}

// args are the runtime's arguments for a subcommand: --root and the
// runtime's own global flags come first, as runc's command line requires.
func (in *instance) args(sub ...string) []string {
	args := append([]string{"--root", in.state}, in.Args...)
	return append(args, sub...)
}

// abort ends a run early: it deletes the container, kills what is left of the
// runtime's process group, waits for the runtime to exit, and deletes the
// container again in case the runtime created it after the first delete.
func (in *instance) abort(id string, cmd *exec.Cmd, exited <-chan exit) {
	in.forceDelete(id)
	// The group, not the process: runtimes fork helpers (runc init, gofers)
	// that must not outlive the run.
	syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	<-exited
	in.forceDelete(id)
}

// forceDelete kills and deletes container id if it exists. Its failure is
// expected (the container may be gone already) and is not reported here: the
// sweep at the end of the session finds what is really left.
func (in *instance) forceDelete(id string) {
	if in.Kind == KindNative {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
	defer cancel()
	exec.CommandContext(ctx, in.path, in.args("delete", "--force", id)...).Run()
}

// sweep deletes every container left in the runtime's state directory and
// returns an error naming those it could not delete.
func (in *instance) sweep() error {
	if in.Kind == KindNative {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
	defer cancel()
	out, err := exec.CommandContext(ctx, in.path, in.args("list", "--quiet")...).Output()
	if err != nil {
		// A runtime that rejects its own flags (moat before it has a
		// platform) cannot list, but then it created nothing either.
		if entries, rerr := os.ReadDir(in.state); rerr == nil && len(entries) == 0 {
			return nil
		}
		var exitErr *exec.ExitError
		if errors.As(err, &exitErr) {
			err = fmt.Errorf("%v: %s", err, strings.TrimSpace(string(exitErr.Stderr)))
		}
		return fmt.Errorf("%s list, to find containers left behind: %v", in.Name, err)
	}
	var left []string
	for _, id := range strings.Fields(string(out)) {
		in.forceDelete(id)
		left = append(left, id)
	}
	if len(left) == 0 {
		return nil
	}
	out, err = exec.CommandContext(ctx, in.path, in.args("list", "--quiet")...).Output()
	if err != nil || len(strings.Fields(string(out))) > 0 {
		return fmt.Errorf("%s: could not delete containers %s", in.Name, strings.Join(left, ", "))
	}
	return nil
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
