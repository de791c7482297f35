package main

import (
	"flag"
	"fmt"
	"io"
	"net/netip"
	"os"
	"runtime"

	"github.com/moat-sandbox/moat/internal/confine"
	"github.com/moat-sandbox/moat/internal/usernet"
	"github.com/moat-sandbox/moat/sentry/net/netstack"
)

// usernetCommand is the internal subcommand that is the host's side of a
// `moat sandbox` network (local_net.go starts it): a process of its own,
// so that the netstack that parses the sandbox's frames runs confined, as
// the sentry and the gofer do, rather than in the CLI.
const usernetCommand = "usernet"

// The descriptors moat usernet gets: the link's host end, and a pipe its
// log lines go to (the CLI writes them to its log). Its stdin is a pipe
// whose end-of-file, when the CLI closes it or dies, stops it.
const (
	usernetLinkFD = 3
	usernetLogFD  = 4
)

// usernetReady is moat usernet's first log line once it serves the link;
// any other first line is why it could not.
const usernetReady = "ready"

// usernetMain serves the link until stdin ends. Flags: --upstream
// ADDR:PORT, the host's resolver; --allow ENTRIES, the allowlist (none:
// all of the network); --user UID:GID, whom to become (root's runs).
func usernetMain(args []string) int {
	fs := flag.NewFlagSet("usernet", flag.ContinueOnError)
	upstream := fs.String("upstream", "", "")
	allow := fs.String("allow", "", "")
	user := fs.String("user", "", "")
	var hostCalls confine.Mode
	fs.Func("host-calls", "", func(v string) (err error) {
		hostCalls, err = confine.ParseMode(v)
		return err
	})
	err := fs.Parse(args)
	logw := os.NewFile(usernetLogFD, "usernet-log")
	logf := func(format string, args ...any) { fmt.Fprintf(logw, format+"\n", args...) }
	cfg := usernet.Config{Log: logf}
	if err == nil {
		cfg.Upstream, err = netip.ParseAddrPort(*upstream)
	}
	if err == nil && *allow != "" {
		cfg.Allow, err = netstack.ParseEgress(*allow, logf)
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
		logf("%v", err)
		return 1
	}
	logf("%s", usernetReady)
	io.Copy(io.Discard, os.Stdin)
	n.Close()
	return 0
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
