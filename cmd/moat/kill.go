package main

import (
	"fmt"

	"github.com/moat-sandbox/moat/internal/control"
	"github.com/moat-sandbox/moat/internal/state"
	"golang.org/x/sys/unix"
)

var killCommand = &command{
	name:    "kill",
	args:    "<container-id> [signal]",
	minArgs: 1, maxArgs: 2,
	summary: "send a signal to the container's init process (default SIGTERM)",
	detail: `
The signal is a name with or without the SIG prefix (KILL, SIGKILL, kill) or a
number (9). The sentry delivers it inside the sandbox. SIGKILL always ends the
container: if the sentry does not answer or exit within a short time, moat
kills the sentry itself.`,
	setup: func(o *options) func(*globalOptions, []string) error {
		var all bool
		o.Bool(&all, "all,a", "send the signal to every process in the container")
		return func(g *globalOptions, args []string) error {
			signal := "SIGTERM"
			if len(args) == 2 {
				signal = args[1]
			}
			return killContainer(g, args[0], signal, all)
		}
	},
}

func killContainer(g *globalOptions, id, signal string, all bool) error {
	sig, err := parseSignal(signal)
	if err != nil {
		return err
	}
	dir, c, err := openContainer(g, id)
	if err != nil {
		return err
	}
	defer dir.Close()
	if err := state.CheckKill(c.Status()); err != nil {
		return err
	}
	req := control.Request{Op: control.OpKill, Signal: int(sig), All: all}
	if sig != unix.SIGKILL {
		if _, err := callContainer(g, dir, c, req, controlTimeout); err != nil {
			return fmt.Errorf("send %v to container %s: %w", sig, id, err)
		}
		return nil
	}
	return killSandbox(g, dir, c, all)
}

// killSandbox sends SIGKILL to the locked container c (to every process
// with all), which must end it even when its sentry cannot help: a sentry
// that does not answer or outlives the grace is killed itself. For a
// container of a pod, c.Sentry is the stand-in for its init, which goes
// when the init does; killed, it takes the container with it.
func killSandbox(g *globalOptions, dir *state.Dir, c *state.Container, all bool) error {
	req := control.Request{Op: control.OpKill, Signal: int(unix.SIGKILL), All: all}
	_, err := callContainer(g, dir, c, req, killGrace)
	if err == nil {
		if err = c.Sentry.WaitGone(killGrace); err == nil {
			return nil
		}
	}
	g.log.debugf("container %s: the sentry did not deliver SIGKILL (%v); killing it", c.ID, err)
	if err := c.Sentry.Kill(); err != nil {
		return fmt.Errorf("kill container %s: %w", c.ID, err)
	}
	if err := c.Sentry.WaitGone(exitTimeout); err != nil {
		return fmt.Errorf("kill container %s: sentry: %w", c.ID, err)
	}
	return nil
}
