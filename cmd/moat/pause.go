package main

import (
	"fmt"

	"github.com/moat-sandbox/moat/internal/control"
	"github.com/moat-sandbox/moat/internal/state"
)

var pauseCommand = &command{
	name:    "pause",
	args:    "<container-id>",
	minArgs: 1, maxArgs: 1,
	summary: "stop every process of a running container until resume",
	detail: `
The sentry stops every guest thread: none runs guest code until 'moat
resume'. A thread blocked in a system call goes on waiting and stops when it
would next run guest code. The container's status is paused; SIGKILL still
ends it, and exec waits for resume.`,
	setup: func(o *options) func(*globalOptions, []string) error {
		return func(g *globalOptions, args []string) error {
			return pauseResume(g, args[0], true)
		}
	},
}

var resumeCommand = &command{
	name:    "resume",
	args:    "<container-id>",
	minArgs: 1, maxArgs: 1,
	summary: "let a paused container's processes run again",
	setup: func(o *options) func(*globalOptions, []string) error {
		return func(g *globalOptions, args []string) error {
			return pauseResume(g, args[0], false)
		}
	},
}

func pauseResume(g *globalOptions, id string, pause bool) error {
	dir, c, err := openContainer(g, id)
	if err != nil {
		return err
	}
	defer dir.Close()
	op, check, to := control.OpResume, state.CheckResume, state.Running
	if pause {
		op, check, to = control.OpPause, state.CheckPause, state.Paused
	}
	if err := check(c.Status()); err != nil {
		return err
	}
	if _, err := callContainer(g, dir, c, control.Request{Op: op}, controlTimeout); err != nil {
		return fmt.Errorf("%s container %s: %w", op, id, err)
	}
	if err := c.Record(to); err != nil {
		return err
	}
	g.log.debugf("container %s %s", id, to)
	return dir.Save(c)
}
