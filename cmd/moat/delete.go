package main

import (
	"errors"

	"github.com/moat-sandbox/moat/internal/state"
)

var deleteCommand = &command{
	name:    "delete",
	args:    "<container-id>",
	minArgs: 1, maxArgs: 1,
	summary: "delete a stopped container and everything it holds",
	detail: `
A stopped container's remaining processes and state are removed. A container
that was created but never started is stopped first, as runc does. A running
container is refused unless --force is given, which kills it with SIGKILL.`,
	setup: func(o *options) func(*globalOptions, []string) error {
		var force bool
		o.Bool(&force, "force,f", "kill the container with SIGKILL if it still runs, and succeed if it does not exist")
		return func(g *globalOptions, args []string) error {
			return deleteContainer(g, args[0], force)
		}
	},
}

func deleteContainer(g *globalOptions, id string, force bool) error {
	dir, c, err := openContainer(g, id)
	if errors.Is(err, state.ErrNotExist) && force {
		return nil // as runc: what is not there is deleted
	}
	if err != nil {
		return err
	}
	defer dir.Close()
	if !force {
		if err := state.CheckDelete(id, c.Status()); err != nil {
			return err
		}
	}
	return destroy(g, dir, c)
}
