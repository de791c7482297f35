// Package control defines what the moat CLI and a sandbox's sentry say to
// each other: the one-time setup hand-over when `moat create` starts the
// sentry, and the requests (start, kill) that later CLI invocations send over
// the container's control socket.
//
// It must never carry anything the guest controls: every message here comes
// from the CLI, which is trusted.
package control

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net"
	"time"

	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// File descriptors that `moat boot` (the sentry) inherits, beside the guest's
// stdio on 0, 1 and 2.
const (
	BootGoferFD   = 3 // SOCK_SEQPACKET to the gofer
	BootControlFD = 4 // listening unix stream socket at <state dir>/control.sock
	BootSetupFD   = 5 // unix stream socket: Setup in, one Response out
	// BootBindFD0 is the gofer socket of the first bind mount in
	// Setup.Binds, BootBindFD0+1 of the second, and so on.
	BootBindFD0 = 6
)

// The sockets that `moat gofer` serves on: the root file system's, then
// one per bind mount, in the order of its --bind flags.
const (
	GoferServeFD = 3
	GoferBindFD0 = 4
)

// Setup is what `moat create` hands to the sentry once, over BootSetupFD.
// The sentry reads no host file: the bundle's config arrives here, parsed.
type Setup struct {
	ID        string      `json:"id"`
	Bundle    string      `json:"bundle"` // absolute path, for messages only
	Spec      *specs.Spec `json:"spec"`
	LogPath   string      `json:"logPath,omitempty"` // where the sentry appends its log
	LogFormat string      `json:"logFormat,omitempty"`
	Debug     bool        `json:"debug,omitempty"`
	// Binds are the indexes in Spec.Mounts of the bind mounts, whose gofer
	// sockets are on BootBindFD0 onwards, in this order.
	Binds []int `json:"binds,omitempty"`
	// RootfsWrites says where writes to a writable root go:
	// bundle.WritesOverlay (an upper layer in the sandbox, over the image
	// that the gofer serves read-only) or bundle.WritesHost.
	RootfsWrites string `json:"rootfsWrites,omitempty"`
}

// Request is one control-socket call.
type Request struct {
	Op     string `json:"op"`               // OpStart or OpKill
	Signal int    `json:"signal,omitempty"` // OpKill: signal number
	All    bool   `json:"all,omitempty"`    // OpKill: every process of the container
}

// Control operations.
const (
	OpStart = "start"
	OpKill  = "kill"
)

// Response answers a Setup (the sandbox is ready, or why not) or a Request.
type Response struct {
	Error string `json:"error,omitempty"`
}

// Err turns a Response into a Go error.
func (r Response) Err() error {
	if r.Error == "" {
		return nil
	}
	return fmt.Errorf("%s", r.Error)
}

// Call sends req to the control socket at path and waits for the answer.
func Call(path string, req Request, timeout time.Duration) error {
	conn, err := net.DialTimeout("unix", path, timeout)
	if err != nil {
		return fmt.Errorf("connect to sandbox control socket: %w", err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(timeout))
	if err := json.NewEncoder(conn).Encode(req); err != nil {
		return fmt.Errorf("send %s request: %w", req.Op, err)
	}
	var resp Response
	if err := json.NewDecoder(bufio.NewReader(conn)).Decode(&resp); err != nil {
		return fmt.Errorf("read %s reply: %w", req.Op, err)
	}
	return resp.Err()
}
