package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net/netip"
	"os"
	"runtime"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/internal/confine"
	"github.com/moat-sandbox/moat/internal/control"
	"github.com/moat-sandbox/moat/internal/usernet"
	"github.com/moat-sandbox/moat/sentry/net/netstack"
)

// usernetCommand is the internal subcommand that is the host's side of a
// sandbox's user-space network (usernet_start.go starts it): a process of
// its own, so that the netstack that parses the sandbox's frames runs
// confined, as the sentry and the gofer do, rather than in the CLI.
const usernetCommand = "usernet"

// usernetReady is moat usernet's first line once it serves the link;
// any other first line is why it could not.
const usernetReady = "ready"

// usernetMain serves the link until the sentry exits
// (usernet_start.go has its descriptors). Flags: --upstream ADDR:PORT,
// the host's resolver; --allow ENTRIES, the allowlist (none: all of the
// network); --user UID:GID, whom to become (root's runs); --log-format,
// given with the --log file, the file's format.
func usernetMain(args []string) int {
	fs := flag.NewFlagSet("usernet", flag.ContinueOnError)
	upstream := fs.String("upstream", "", "")
	allow := fs.String("allow", "", "")
	user := fs.String("user", "", "")
	logFormat := fs.String("log-format", "", "")
	var hostCalls confine.Mode
	fs.Func("host-calls", "", func(v string) (err error) {
		hostCalls, err = confine.ParseMode(v)
		return err
	})
	err := fs.Parse(args)
	ready := os.NewFile(usernetReadyFD, "usernet-ready")
	sentry := os.NewFile(usernetSentryFD, "sentry-pidfd")
	cfg := usernet.Config{}
	var lg *logger
	if err == nil && *logFormat != "" {
		lg, err = inheritedLog(usernetLogFD, "moat-log", *logFormat, false)
	}
	if lg != nil && lg.file != nil {
		cfg.Log = func(format string, args ...any) { lg.write(lg.file, "info", fmt.Sprintf(format, args...)) }
	}
	if err == nil {
		cfg.Upstream, err = netip.ParseAddrPort(*upstream)
	}
	if err == nil && *allow != "" {
		cfg.Allow, err = netstack.ParseEgress(*allow, cfg.Log)
	}
	var ids *confine.IDs
	if err == nil && *user != "" {
		ids, err = parseIDs(*user)
	}
	if err == nil {
		err = confineUsernet(ids, hostCalls)
	}
	var n *usernet.Net
	if err == nil {
		n, err = usernet.Start(os.NewFile(usernetLinkFD, "usernet-link"), cfg)
	}
	if err != nil {
		// The first line says how the start went (usernetReady).
		fmt.Fprintf(ready, "%v\n", err)
		return 1
	}
	fmt.Fprintf(ready, "%s\n", usernetReady)
	ready.Close()
	go servePolicy(usernetPolicyFD, n, cfg.Log)
	waitExit(sentry)
	n.Close()
	return 0
}

// waitExit waits until the process pidfd names has exited: a pidfd polls
// readable then.
func waitExit(pidfd *os.File) {
	fds := []unix.PollFd{{Fd: int32(pidfd.Fd()), Events: unix.POLLIN}}
	for {
		n, err := unix.Ppoll(fds, nil, nil)
		if n > 0 || err != nil && !errors.Is(err, unix.EINTR) {
			return
		}
	}
}

// confineUsernet shuts the process in (in the namespaces the CLI started
// it in: all but the network's, which it dials out of): its root becomes
// an empty read-only directory, every capability goes, it becomes ids
// (the overflow user when root runs moat sandbox), and its host calls are
// the allowlist's (confine.UsernetCalls; hostCalls "log" is the audit
// mode). What it needs of the host it was given: the resolver's address,
// and descriptors.
func confineUsernet(ids *confine.IDs, hostCalls confine.Mode) error {
	if !confineFully {
		return nil
	}
	runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	poller, err := confine.StartPoller()
	if err != nil {
		return err
	}
	if err := confine.EnterEmptyRoot(); err != nil {
		return err
	}
	if err := confine.DropPrivileges(0, ids); err != nil {
		return err
	}
	return confine.UsernetCalls.With(poller.Calls()).Install(hostCalls)
}

// servePolicy takes new allowlists on the listening socket fd, one
// control.OpEgress request per connection, answered with a
// control.Response, until the process ends. Raw calls, not Go's net: a
// net.Listener of an inherited socket would dup it and ask its type, and
// the filter allows accept4 on fd alone (confine.UsernetCalls). Only the
// socket's owner can connect (listenUnix), so a request is the runtime's.
func servePolicy(fd int, n *usernet.Net, log func(string, ...any)) {
	for {
		c, _, err := unix.Accept4(fd, unix.SOCK_CLOEXEC)
		if errors.Is(err, unix.EINTR) || errors.Is(err, unix.ECONNABORTED) {
			continue
		}
		if err != nil {
			return
		}
		resp := control.Response{}
		if err := takePolicy(c, n, log); err != nil {
			resp.Error = err.Error()
		}
		if data, err := json.Marshal(resp); err == nil {
			unix.Write(c, append(data, '\n'))
		}
		unix.Close(c)
	}
}

// maxPolicyRequest bounds a policy request: an allowlist's entries.
const maxPolicyRequest = 1 << 20

// takePolicy reads one request from connection c and applies it.
func takePolicy(c int, n *usernet.Net, log func(string, ...any)) error {
	var line []byte
	buf := make([]byte, 4096)
	for !bytes.Contains(line, []byte{'\n'}) {
		k, err := unix.Read(c, buf)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil || k == 0 {
			return fmt.Errorf("usernet: policy request: cut short")
		}
		if line = append(line, buf[:k]...); len(line) > maxPolicyRequest {
			return fmt.Errorf("usernet: policy request: too long")
		}
	}
	var req control.Request
	if err := json.Unmarshal(line[:bytes.IndexByte(line, '\n')], &req); err != nil {
		return fmt.Errorf("usernet: policy request: %w", err)
	}
	if req.Op != control.OpEgress || req.Egress == nil {
		return fmt.Errorf("usernet: %q with no allowlist: the one request it takes is %q", req.Op, control.OpEgress)
	}
	e, err := netstack.EgressFrom(req.Egress.All, req.Egress.Allow, log)
	if err != nil {
		return err
	}
	n.SetAllow(e)
	return nil
}
