package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"

	"github.com/moat-sandbox/moat/internal/control"
	"github.com/moat-sandbox/moat/sentry/boot"
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
	l, err := openLog(setup.LogPath, setup.LogFormat, setup.Debug)
	if err != nil {
		reply(setupConn, err)
		return 1
	}
	defer l.close()

	sb, err := boot.New(&setup, control.BootGoferFD, l.sentryf)
	if err != nil {
		var initErr *kernel.InitError
		if !errors.As(err, &initErr) {
			err = fmt.Errorf("sentry: %w", err)
		}
		reply(setupConn, err)
		return 1
	}
	listener, err := net.FileListener(os.NewFile(control.BootControlFD, "control"))
	if err != nil {
		reply(setupConn, fmt.Errorf("sentry: control socket: %w", err))
		return 1
	}
	reply(setupConn, nil)
	return sb.Serve(listener)
}

// reply sends the one Setup response and closes the setup socket.
func reply(conn io.WriteCloser, err error) {
	var resp control.Response
	if err != nil {
		resp.Error = err.Error()
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
