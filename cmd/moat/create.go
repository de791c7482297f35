package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/moat-sandbox/moat/internal/bundle"
	"github.com/moat-sandbox/moat/internal/state"
	"github.com/moat-sandbox/moat/sentry/boot"
)

var createCommand = &command{
	name:    "create",
	args:    "<container-id>",
	minArgs: 1, maxArgs: 1,
	summary: "create a container: start its sandbox, ready to run the program on `start`",
	detail: `
The bundle is a directory holding config.json and the root filesystem that
config.json names. create checks the bundle, starts the container's sentry and
gofer, and returns once the sentry has loaded the program; the program runs on
'moat start'. The container's pid (written to --pid-file) is the sentry's.

If process.terminal is true, --console-socket must name a unix socket: moat
sends the master end of the container's terminal there, as runc does.`,
	setup: func(o *options) func(*globalOptions, []string) error {
		var co createOptions
		co.declare(o)
		return func(g *globalOptions, args []string) error {
			co.mayJoinPod = true
			cr, err := createContainer(g, args[0], co, true)
			if err != nil {
				return err
			}
			return cr.dir.Close()
		}
	},
}

// createOptions are the options create and run share.
type createOptions struct {
	bundleDir     string
	pidFile       string
	consoleSocket string
	noPivot       bool
	noNewKeyring  bool
	// mayJoinPod: a container of a pod whose sandbox moat runs joins
	// that sandbox (pod.go). Only create sets it: a CRI runtime creates
	// each container, and `run` stays with a sandbox of its own.
	mayJoinPod bool
	// signalsCaught, if set, is closed once the CLI catches signals:
	// createContainer waits for it before the sandbox's first process
	// starts (run.go).
	signalsCaught <-chan struct{}
}

func (co *createOptions) declare(o *options) {
	o.String(&co.bundleDir, "bundle,b", "DIR", ".", "the bundle directory")
	o.String(&co.pidFile, "pid-file", "FILE", "", "write the container's pid to FILE once it is created")
	o.String(&co.consoleSocket, "console-socket", "PATH", "", "unix socket that receives the master end of the container's terminal")
	o.Bool(&co.noPivot, "no-pivot", "accepted for compatibility with runc; moat never pivots the host's root")
	o.Bool(&co.noNewKeyring, "no-new-keyring", "accepted for compatibility with runc; the guest never sees the host's keyrings")
}

// createdContainer is a container that createContainer made, still locked.
type createdContainer struct {
	dir     *state.Dir
	record  *state.Container
	sandbox *sandbox
	// console is the terminal's master end when this CLI serves the
	// terminal itself (run in the foreground), else nil.
	console *os.File
}

// createContainer checks the bundle, makes the state directory, starts the
// sandbox and waits until it is ready. detached says whether the CLI will
// leave the container to others (create, run -d) or stay with it. On error
// nothing remains: each step is undone in reverse order.
func createContainer(g *globalOptions, id string, co createOptions, detached bool) (_ *createdContainer, err error) {
	// Everything that can be checked is checked before anything exists.
	b, err := bundle.Load(co.bundleDir)
	if err != nil {
		return nil, err
	}
	inner, err := cgroupInner(g, id, b.Spec.Linux)
	if err != nil {
		return nil, err
	}
	terminal := b.Spec.Process.Terminal
	if err := checkConsole(terminal, detached, co.consoleSocket); err != nil {
		return nil, err
	}
	pidFile := co.pidFile
	if pidFile != "" {
		if pidFile, err = filepath.Abs(pidFile); err != nil {
			return nil, fmt.Errorf("pid file: %w", err)
		}
	}

	var pod *route
	if co.mayJoinPod {
		if pod, err = podToJoin(g, id, b); err != nil {
			return nil, err
		}
		if pod != nil {
			defer pod.close()
		}
	}

	dir, err := state.Create(g.root, id)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			dir.Remove()
			dir.Close()
		}
	}()

	stdio := [3]*os.File{os.Stdin, os.Stdout, os.Stderr}
	var console *os.File
	if terminal {
		var master, replica *os.File
		// Plain assignment: the deferred Close below must see the final err.
		if master, replica, err = openPTY(); err != nil {
			return nil, err
		}
		// The sentry holds the replica from here on: the CLI's copy must go,
		// or the master would never see the terminal close.
		defer replica.Close()
		stdio = [3]*os.File{replica, replica, replica}
		if detached {
			err = sendConsole(co.consoleSocket, master)
			master.Close()
			if err != nil {
				return nil, err
			}
		} else {
			console = master
			defer func() {
				if err != nil {
					master.Close()
				}
			}()
		}
	}

	c := &state.Container{
		ID:          id,
		Bundle:      b.Dir,
		Rootfs:      b.Rootfs,
		Created:     time.Now().UTC(),
		Annotations: b.Spec.Annotations,
		Recorded:    state.Creating,
		Namespaces:  boot.JoinedNamespaces(b.Spec.Linux),
		Hooks:       b.Spec.Hooks,
	}
	if co.signalsCaught != nil {
		<-co.signalsCaught
	}
	var sb *sandbox
	if pod != nil {
		files := stdio[:]
		if terminal {
			files = stdio[:1] // the replica, once
		}
		if err := joinPod(g, dir, c, b, inner, files, pod); err != nil {
			return nil, err
		}
		defer func() {
			if err != nil {
				stopPodMember(c)
			}
		}()
	} else {
		if sb, err = startSandbox(g, dir, c, b, inner, stdio); err != nil {
			return nil, err
		}
		defer func() {
			if err != nil {
				sb.stop()
			}
		}()
	}
	if err := runCreateHooks(c.Hooks, c); err != nil {
		return nil, err
	}
	if err := c.Record(state.Created); err != nil {
		return nil, err
	}
	if err := dir.Save(c); err != nil {
		return nil, err
	}
	// Last: containerd takes the pid file as the sign that create is done.
	if pidFile != "" {
		if err := writePIDFile(pidFile, c.Sentry.PID); err != nil {
			return nil, err
		}
	}
	g.log.debugf("container %s created", id)
	return &createdContainer{dir: dir, record: c, sandbox: sb, console: console}, nil
}

// writePIDFile writes pid to path atomically, as runc does (no newline), so
// that a reader never sees an empty or partial file.
func writePIDFile(path string, pid int) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("pid file: %w", err)
	}
	_, err = tmp.WriteString(strconv.Itoa(pid))
	if err == nil {
		err = tmp.Chmod(0o644) // CreateTemp's 0600 would hide it from unprivileged readers
	}
	if closeErr := tmp.Close(); err == nil {
		err = closeErr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("pid file: %w", err)
	}
	return nil
}
