package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"runtime"

	"github.com/moat-sandbox/moat/internal/confine"
	"github.com/moat-sandbox/moat/internal/control"
	"github.com/moat-sandbox/moat/internal/heaprelease"
	"github.com/moat-sandbox/moat/platform/kvm"
	"github.com/moat-sandbox/moat/sentry/boot"
	"github.com/moat-sandbox/moat/sentry/fs/procfs"
	"github.com/moat-sandbox/moat/sentry/fs/sysfs"
	"github.com/moat-sandbox/moat/sentry/kernel"
)

// bootMain is `moat boot`: the sentry of one sandbox, started by `moat
// create` with the fds of control.Boot*FD. It reads its Setup, builds the
// sandbox, says whether it is ready, and then serves the control socket
// until the guest's init is done; it exits with init's status.
func bootMain(args []string) int {
	if len(args) != 0 {
		fmt.Fprintln(os.Stderr, "moat boot: takes no arguments (it is started by moat create)")
		return 2
	}
	setupConn := os.NewFile(control.BootSetupFD, "setup")
	var setup control.Setup
	if err := json.NewDecoder(setupConn).Decode(&setup); err != nil {
		reply(setupConn, fmt.Errorf("read setup: %w", err))
		return 1
	}
	l, err := inheritedLog(control.BootLogFD, setup.LogPath, setup.LogFormat, setup.Debug)
	if err != nil {
		reply(setupConn, err)
		return 1
	}
	defer l.close()

	mode, err := confine.ParseMode(setup.HostCalls)
	if err == nil && confineFully {
		err = confineSentry(setup.SentryUser)
	}
	if err != nil {
		reply(setupConn, fmt.Errorf("sentry: %w", err))
		return 1
	}
	// Before the filter: wrapping a socket asks the host about it.
	ctl := os.NewFile(control.BootControlFD, "control")
	listener, err := net.FileListener(ctl) // a copy of the descriptor
	ctl.Close()
	if err != nil {
		reply(setupConn, fmt.Errorf("sentry: control socket: %w", err))
		return 1
	}
	calls := confine.SentryCalls
	if setup.Platform == control.PlatformKVM {
		kvm.DeviceFD = control.BootKVMFD
		calls = calls.With(confine.KVMCalls(kvm.HostIoctls))
	}
	installFilter := func() error { return calls.Install(mode) }
	if !confineFully {
		installFilter = nil
	}
	sb, err := boot.New(&setup, control.BootGoferFD, l.sentryf, installFilter)
	if err != nil {
		var initErr *kernel.InitError
		if !errors.As(err, &initErr) {
			err = fmt.Errorf("sentry: %w", err)
		}
		reply(setupConn, err)
		return 1
	}
	reply(setupConn, nil)
	heaprelease.Start()
	return sb.Serve(listener)
}

// confineSentry shuts the sentry in, in the namespaces the CLI started it
// in (sandbox.go), before it reads anything of the image or the guest:
// what it shows of the host's files is read first, then its root becomes
// an empty read-only directory, every capability goes and it becomes the
// user the CLI names (the overflow user, when root starts it). The seccomp
// filter follows once the platform has forked its first stub (boot.New),
// which must not inherit it. GOMAXPROCS is fixed, so that the Go runtime
// never reads the cgroup files again.
func confineSentry(user *[2]uint32) error {
	runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	procfs.ReadHostFiles()
	sysfs.ReadHostFiles()
	if err := confine.EnterEmptyRoot(); err != nil {
		return err
	}
	var ids *confine.IDs
	if user != nil {
		ids = &confine.IDs{UID: user[0], GID: user[1]}
	}
	return confine.DropPrivileges(0, ids)
}

// reply sends the one Setup response and closes the setup socket.
func reply(conn io.WriteCloser, err error) {
	var resp control.Response
	if err != nil {
		resp.Error = err.Error()
		var initErr *kernel.InitError
		if errors.As(err, &initErr) && initErr.Unrunnable != 0 {
			resp.Errno, resp.Unrunnable = int(initErr.Unrunnable), true
		}
	}
	json.NewEncoder(conn).Encode(resp)
	conn.Close()
}

// sentryf logs a sentry diagnostic: to the --log file when there is one,
// to stderr only with --debug (stderr is the guest's).
func (l *logger) sentryf(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	switch {
	case l.file != nil:
		l.write(l.file, "warning", "sentry: "+msg)
	case l.debug:
		l.write(os.Stderr, "warning", "sentry: "+msg)
	}
}
