package ocirun

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"time"

	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// Root is a runtime at one state directory (its --root): every container
// command goes through it.
type Root struct {
	*Runtime
	Dir string
}

// At is the runtime at state directory dir.
func (rt *Runtime) At(dir string) Root {
	return Root{Runtime: rt, Dir: dir}
}

// Args is the command line of a subcommand: --root and the runtime's
// flags, then sub; runc's command line takes global flags only before the
// subcommand.
func (r Root) Args(sub ...string) []string {
	return slices.Concat([]string{"--root", r.Dir}, r.Flags, sub)
}

// Command is the runtime process for a subcommand, its stdio not yet set.
func (r Root) Command(sub ...string) *exec.Cmd {
	return exec.Command(r.Path, r.Args(sub...)...)
}

// Run runs bundle (a directory) as container id, `run --bundle BUNDLE ID`,
// as the package's Run runs any process. A nil lim.Stop asks the runtime to
// kill the container with SIGKILL. A runtime deletes a container that ran
// to its end, not one it failed to start or that was stopped: deleting it
// then is the caller's part.
func (r Root) Run(ctx context.Context, bundle, id string, stdio Stdio, lim Limits) Exit {
	if lim.Stop == nil {
		lim.Stop = func() { r.Kill(id, "KILL") }
	}
	return Run(ctx, r.Command("run", "--bundle", bundle, id), stdio, lim)
}

// CommandTimeout bounds each lifecycle command: a wedged runtime must not
// keep its caller from finishing, or from exiting after a Ctrl-C.
const CommandTimeout = 30 * time.Second

// Create creates container id from bundle without starting it.
// Its init keeps stdio for the container's process: files, not pipes (see
// Output), and what the runtime says goes there too.
func (r Root) Create(bundle, id string, stdio Stdio) error {
	sub := []string{"create", "--bundle", bundle, id}
	x := Run(context.Background(), r.Command(sub...), stdio, Limits{Timeout: CommandTimeout})
	return r.failure(sub, x, "")
}

// Kill sends signal (a name, "KILL", or a number) to container id's init.
func (r Root) Kill(id, signal string) error {
	_, err := r.do("kill", id, signal)
	return err
}

// Delete deletes container id, killing it first if it still runs. It fails
// when the runtime cannot delete it; a runtime may also fail when there is
// no such container, which callers that delete to be sure expect.
func (r Root) Delete(id string) error {
	_, err := r.do("delete", "--force", id)
	return err
}

// State is container id's state as the runtime reports it.
func (r Root) State(id string) (specs.State, error) {
	var st specs.State
	out, err := r.do("state", id)
	if err == nil {
		err = json.Unmarshal([]byte(out), &st)
	}
	return st, err
}

// List is the ids of the containers in the state directory.
func (r Root) List() ([]string, error) {
	out, err := r.do("list", "--quiet")
	return strings.Fields(out), err
}

// Sweep deletes every container the runtime lists in its state directory
// and returns an error naming those still there. A runtime that cannot
// list (one that rejects its own flags, say) created nothing when the
// directory is empty, and then there is nothing to sweep.
func (r Root) Sweep() error {
	ids, err := r.List()
	if err != nil {
		if entries, rerr := os.ReadDir(r.Dir); rerr == nil && len(entries) == 0 {
			return nil
		}
		return fmt.Errorf("finding the containers %s left behind: %w", r.Name, err)
	}
	if len(ids) == 0 {
		return nil
	}
	for _, id := range ids {
		r.Delete(id)
	}
	left, err := r.List()
	if err != nil {
		left = ids
	}
	if len(left) > 0 {
		return fmt.Errorf("%s: could not delete containers %s", r.Name, strings.Join(left, ", "))
	}
	return nil
}

// do runs a lifecycle subcommand to its end and returns its stdout. It
// runs even when the caller is being interrupted, since it is what cleans
// up after an interrupted run; CommandTimeout bounds it instead.
func (r Root) do(sub ...string) (string, error) {
	var stdout, stderr strings.Builder
	x := Run(context.Background(), r.Command(sub...), Stdio{Stdout: &stdout, Stderr: &stderr}, Limits{Timeout: CommandTimeout})
	return stdout.String(), r.failure(sub, x, stderr.String())
}

// failure is nil when x succeeded, else an error naming the runtime, the
// subcommand and how it failed, with the runtime's complaint if it made one.
func (r Root) failure(sub []string, x Exit, stderr string) error {
	err := x.Err()
	if err == nil {
		return nil
	}
	msg := fmt.Sprintf("%s %s: %v", r.Name, strings.Join(sub, " "), err)
	if s := strings.TrimSpace(stderr); s != "" {
		msg += ": " + s
	}
	return errors.New(msg)
}
