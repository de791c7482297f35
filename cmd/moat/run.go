package main

import (
	"errors"
	"os"
	"os/signal"
	"syscall"

	"github.com/moat-sandbox/moat/internal/control"
	"github.com/moat-sandbox/moat/internal/state"
)

var runCommand = &command{
	name:    "run",
	args:    "<container-id>",
	minArgs: 1, maxArgs: 1,
	summary: "create and start a container, and wait for it unless --detach",
	detail: `
In the foreground, moat stays the sentry's parent: it forwards the signals it
receives to the container, serves the container's terminal on its own stdin and
stdout if process.terminal is true, deletes the container when it exits (unless
--keep) and exits with the container's status (128+N if it died of signal N).`,
	setup: func(o *options) func(*globalOptions, []string) error {
		var ro runOptions
		ro.create.declare(o)
		o.Bool(&ro.detach, "detach,d", "return once the container runs")
		o.Bool(&ro.keep, "keep", "do not delete the container once it exits")
		return func(g *globalOptions, args []string) error {
			return runContainer(g, args[0], ro)
		}
	},
}

type runOptions struct {
	create createOptions
	detach bool
	keep   bool
}

func runContainer(g *globalOptions, id string, ro runOptions) error {
	// In the foreground, signals are caught before the sandbox's first
	// process starts: one that comes while the sandbox is being set up
	// waits here for the container instead of killing the CLI half-way.
	// Catching every signal takes the Go runtime a hand-off per signal
	// (1.3-1.7 ms here), so it runs beside the CLI's own set-up, and
	// createContainer waits for it (signalsCaught). Nothing stops catching
	// them: the CLI exits when the container has (and signal.Stop took as
	// long again); a signal after that, while a kept sandbox is saved,
	// waits unread.
	var signals chan os.Signal
	if !ro.detach {
		signals = make(chan os.Signal, 32)
		caught := make(chan struct{})
		go func() {
			signal.Notify(signals)
			close(caught)
		}()
		ro.create.signalsCaught = caught
	}
	cr, err := createContainer(g, id, ro.create, ro.detach)
	if err != nil {
		return err
	}
	var term *terminalSession
	if cr.console != nil {
		term = attachTerminal(cr.console)
	}
	if err := startContainer(g, cr.dir, cr.record); err != nil {
		cr.sandbox.stop()
		if term != nil {
			term.detach()
		}
		cr.dir.Remove()
		cr.dir.Close()
		return err
	}
	if ro.detach {
		return cr.dir.Close()
	}

	// Nobody else could inspect or kill the container while run held the
	// lock; the directory stays open for the control socket.
	if err := cr.dir.Unlock(); err != nil {
		return err
	}
	status := supervise(g, cr, term, signals)
	cr.dir.Close()
	if !ro.keep {
		if err := deleteAfterRun(g, id); err != nil {
			reportError(g.log, "run", err)
		}
		cr.sandbox.stop() // reaps the gofer that the deletion killed
	}
	return exitStatus(status)
}

// supervise forwards signals to the container until its sentry exits, and
// returns the exit status for run.
func supervise(g *globalOptions, cr *createdContainer, term *terminalSession, signals <-chan os.Signal) int {
	exited := make(chan struct{})
	go func() {
		cr.sandbox.sentry.Wait()
		close(exited)
	}()
	socket := cr.dir.ControlSocket()
	for waiting := true; waiting; {
		select {
		case <-exited:
			waiting = false
		case s := <-signals:
			sig := s.(syscall.Signal)
			switch sig {
			// SIGCHLD is about the CLI's own children, SIGURG is the Go
			// runtime's preemption and SIGPIPE comes from the CLI's own writes.
			case syscall.SIGCHLD, syscall.SIGURG, syscall.SIGPIPE:
				continue
			case syscall.SIGWINCH:
				if term != nil {
					term.resize()
				}
			}
			req := control.Request{Op: control.OpKill, Signal: int(sig)}
			if err := control.Call(socket, req, controlTimeout); err != nil {
				g.log.debugf("container %s: forward %v: %v", cr.record.ID, sig, err)
			}
		}
	}
	if term != nil {
		term.detach()
	}
	ws := cr.sandbox.sentry.ProcessState.Sys().(syscall.WaitStatus)
	if ws.Signaled() && ws.Signal() == syscall.SIGSYS {
		reportError(g.log, "run", errSentryFiltered)
	}
	if ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ws.ExitStatus()
}

// errSentryFiltered is a sentry that died of SIGSYS: its seccomp filter
// kills it for any host call outside its allowlist (internal/confine).
var errSentryFiltered = errors.New("the sentry was killed by its seccomp filter: it made a host call outside its allowlist (docs/security.md)")

// deleteAfterRun deletes the container run waited for, unless someone
// deleted it meanwhile.
func deleteAfterRun(g *globalOptions, id string) error {
	dir, c, err := openContainer(g, id)
	if errors.Is(err, state.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer dir.Close()
	return destroy(g, dir, c)
}
