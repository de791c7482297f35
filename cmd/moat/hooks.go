package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"time"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/moat-sandbox/moat/internal/state"
)

// The OCI lifecycle hooks, run on the host by the CLI as runc runs them:
// each with the container's state as JSON on its stdin, its own args and
// env (and nothing else of the CLI's), in the config's order.
//
//   - prestart, createRuntime and createContainer run in create, once the
//     sandbox exists and before the program may start; the first that
//     fails fails create, which takes the sandbox down. createContainer
//     runs in the runtime's namespaces too: the container's mount
//     namespace is the sentry's own and has no host-side existence.
//   - poststart runs in start once the program runs; a failure kills the
//     container and fails start, as runc does.
//   - poststop runs when the container is deleted, after its processes
//     are gone; a failure is logged and the delete goes on (the spec's
//     rule: what is left to clean would otherwise stay for good).
//
// startContainer hooks would have to run inside the sandbox before the
// program, which the sentry cannot do: bundle.Load refuses them.

// hookOutputLimit bounds what of a failed hook's stdout and stderr the
// error quotes.
const hookOutputLimit = 4096

// hookWaitDelay is how long a finished or killed hook's children may keep
// its stdout open before the CLI stops reading.
const hookWaitDelay = time.Second

// runHooks runs the hooks of one kind in order; the first failure stops
// the rest and is the error, naming the hook by kind and index as runc does.
func runHooks(kind string, hooks []specs.Hook, st ociState) error {
	if len(hooks) == 0 {
		return nil
	}
	stdin, err := json.Marshal(st)
	if err != nil {
		return fmt.Errorf("%s hooks: state: %w", kind, err)
	}
	for i, h := range hooks {
		if err := runHook(h, stdin); err != nil {
			return fmt.Errorf("error running %s hook #%d (%s): %w", kind, i, h.Path, err)
		}
	}
	return nil
}

func runHook(h specs.Hook, stdin []byte) error {
	ctx := context.Background()
	if h.Timeout != nil {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, time.Duration(*h.Timeout)*time.Second)
		defer cancel()
	}
	cmd := exec.CommandContext(ctx, h.Path)
	if len(h.Args) > 0 {
		cmd.Args = h.Args
	}
	cmd.Env = h.Env
	if cmd.Env == nil {
		cmd.Env = []string{} // nil would hand the hook the CLI's environment
	}
	cmd.Stdin = bytes.NewReader(stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.WaitDelay = hookWaitDelay
	err := cmd.Run()
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return fmt.Errorf("ran past its timeout of %ds", *h.Timeout)
	}
	if err != nil {
		return fmt.Errorf("%w; stdout: %q; stderr: %q", err, quoteTail(stdout.String()), quoteTail(stderr.String()))
	}
	return nil
}

// quoteTail is the end of a hook's output, where its error usually is.
func quoteTail(s string) string {
	s = strings.TrimSpace(s)
	if len(s) > hookOutputLimit {
		s = "..." + s[len(s)-hookOutputLimit:]
	}
	return s
}

// hookState is the state a hook reads: the container's at status, which
// is the hook's moment, not what the sentry's liveness says now (a program
// may be done by the time its poststart hook runs).
func hookState(c *state.Container, status state.Status) ociState {
	st := stateOf(c)
	st.Status, st.PID = status, c.Sentry.PID
	if status == state.Stopped {
		st.PID = 0
	}
	return st
}

// runCreateHooks runs the hooks create runs, in the spec's order.
func runCreateHooks(h *specs.Hooks, c *state.Container) error {
	if h == nil {
		return nil
	}
	st := hookState(c, state.Creating)
	// prestart is deprecated in the spec for createRuntime, and still used.
	if err := runHooks("prestart", h.Prestart, st); err != nil {
		return err
	}
	if err := runHooks("createRuntime", h.CreateRuntime, st); err != nil {
		return err
	}
	return runHooks("createContainer", h.CreateContainer, st)
}

// runPoststartHooks runs the poststart hooks of the running container c;
// if one fails, c is killed and start fails with it.
func runPoststartHooks(g *globalOptions, dir *state.Dir, c *state.Container) error {
	if c.Hooks == nil {
		return nil
	}
	err := runHooks("poststart", c.Hooks.Poststart, hookState(c, state.Running))
	if err != nil {
		if kerr := killSandbox(g, dir, c, false); kerr != nil {
			return fmt.Errorf("%w (and killing the container: %v)", err, kerr)
		}
	}
	return err
}

// runPoststopHooks runs the poststop hooks of the stopped container c,
// only warning of a failure.
func runPoststopHooks(g *globalOptions, c *state.Container) {
	if c.Hooks == nil {
		return
	}
	if err := runHooks("poststop", c.Hooks.Poststop, hookState(c, state.Stopped)); err != nil {
		g.log.warnf("container %s: %v", c.ID, err)
	}
}
