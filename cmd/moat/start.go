package main

import (
	"fmt"

	"github.com/moat-sandbox/moat/internal/control"
	"github.com/moat-sandbox/moat/internal/state"
)

var startCommand = &command{
	name:    "start",
	args:    "<container-id>",
	minArgs: 1, maxArgs: 1,
	summary: "run the program of a created container",
	setup: func(o *options) func(*globalOptions, []string) error {
		return func(g *globalOptions, args []string) error {
			dir, c, err := openContainer(g, args[0])
			if err != nil {
				return err
			}
			defer dir.Close()
			return startContainer(g, dir, c)
		}
	},
}

// startContainer asks the sentry of the locked container c to run the
// program, then records that it did.
func startContainer(g *globalOptions, dir *state.Dir, c *state.Container) error {
	if err := state.CheckStart(c.Status()); err != nil {
		return err
	}
	if _, err := callContainer(g, dir, c, control.Request{Op: control.OpStart}, controlTimeout); err != nil {
		return fmt.Errorf("start container %s: %w", c.ID, err)
	}
	if err := c.Record(state.Running); err != nil {
		return err
	}
	g.log.debugf("container %s started", c.ID)
	if err := dir.Save(c); err != nil {
		return err
	}
	return runPoststartHooks(g, dir, c)
}
