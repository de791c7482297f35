package main

import (
	"bufio"
	"bytes"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"github.com/moat-sandbox/moat/internal/confine"
	"github.com/moat-sandbox/moat/internal/control"
	"github.com/moat-sandbox/moat/internal/usernet"
	"github.com/moat-sandbox/moat/sentry/net/netstack"
)

// localNetwork is a `moat sandbox` run's network for --net and
// --net-allow: a user-space one (internal/usernet) whose host side, moat
// usernet (usernet.go), dials out as the sandbox's user, so that it works
// alike as root and rootless, with no network namespace to make.
type localNetwork struct {
	sentryEnd *os.File // the sentry's end of the link, its control.NetFD
	proc      *exec.Cmd
	stop      *os.File      // moat usernet's stdin: closing it stops it
	logDone   chan struct{} // closed when its log ends
}

// localResolvConf is the sandbox's /etc/resolv.conf: the user-space
// network's resolver, which asks the host's.
var localResolvConf = "nameserver " + usernet.Resolver.String() + "\n"

// localNetAllow is the sandbox's allowlist annotation for --net-allow's
// entries: theirs, and the user-space network's resolver, which the
// sentry must let the guest's queries reach (docs/network.md).
func localNetAllow(entries []string) (string, error) {
	v := strings.Join(entries, ",")
	if _, err := netstack.ParseEgress(v, nil); err != nil {
		return "", flagErr("--net-allow", "%s", strings.TrimPrefix(err.Error(), netstack.EgressAnnotation+": "))
	}
	return v + "," + netip.AddrPortFrom(usernet.Resolver, 53).String(), nil
}

// startLocalNetwork starts moat usernet, the host's side of the sandbox's
// network under policy p, and waits until it serves the link; log gets
// the destinations it refuses.
func startLocalNetwork(p localPolicy, log func(string, ...any)) (_ *localNetwork, err error) {
	flag := "--net"
	if !p.Net {
		flag = "--net-allow"
	}
	upstream, err := hostResolver("/etc/resolv.conf")
	if err != nil {
		return nil, flagErr(flag, "%v", err)
	}
	args := []string{"--upstream", upstream.String()}
	if !p.Net {
		v := strings.Join(p.NetAllow, ",")
		if _, err := netstack.ParseEgress(v, nil); err != nil {
			return nil, flagErr(flag, "%s", strings.TrimPrefix(err.Error(), netstack.EgressAnnotation+": "))
		}
		args = append(args, "--allow", v)
	}
	if os.Geteuid() == 0 {
		args = append(args, "--user", idsArg(confine.IDs{UID: uint32(confine.Nobody.Host), GID: uint32(confine.Nobody.HostGroup)}))
	}
	if mode := os.Getenv(hostCallsEnv); mode != "" {
		args = append(args, "--host-calls", mode) // the audit mode, as the sentry's and the gofer's
	}
	var opened []*os.File
	closeAll := func() {
		for _, f := range opened {
			f.Close()
		}
	}
	defer closeAll()
	sentryEnd, hostEnd, err := usernet.Pair()
	if err != nil {
		return nil, err
	}
	logR, logW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("usernet: %w", err)
	}
	stopR, stopW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("usernet: %w", err)
	}
	opened = []*os.File{sentryEnd, hostEnd, logR, logW, stopR, stopW}
	l := &localNetwork{sentryEnd: sentryEnd, stop: stopW, logDone: make(chan struct{})}
	l.proc = internalCommand(usernetCommand, args...)
	l.proc.Stdin = stopR
	l.proc.ExtraFiles = []*os.File{hostEnd, logW} // usernetLinkFD, usernetLogFD
	// Its own session, so that the caller's ^C reaches the command alone;
	// the sentry's confinement, but in the host's network, to dial out.
	l.proc.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	confine.SentryProcAttr(l.proc.SysProcAttr, sandboxIDs(), os.Geteuid() == 0)
	l.proc.SysProcAttr.Cloneflags &^= syscall.CLONE_NEWNET
	if err := l.proc.Start(); err != nil {
		return nil, fmt.Errorf("start usernet: %w", err)
	}
	hostEnd.Close()
	logW.Close()
	stopR.Close()
	lines := bufio.NewScanner(logR)
	ready := make(chan string, 1)
	go func() {
		defer close(l.logDone)
		defer logR.Close()
		first := true
		for lines.Scan() {
			if first {
				ready <- lines.Text()
				first = false
				continue
			}
			log("%s", lines.Text())
		}
		if first {
			ready <- "it quit"
		}
	}()
	var line string
	select {
	case line = <-ready:
	case <-time.After(readyTimeout):
		line = "not ready in time"
	}
	if line != usernetReady {
		l.proc.Process.Kill()
		l.proc.Wait()
		stopW.Close()
		<-l.logDone
		sentryEnd.Close()
		return nil, fmt.Errorf("usernet: %s", line)
	}
	opened = nil
	return l, nil
}

// close stops moat usernet, and every connection it carries, and waits
// for it.
func (l *localNetwork) close() {
	l.sentryEnd.Close()
	l.stop.Close()
	done := make(chan struct{})
	go func() {
		l.proc.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(exitTimeout):
		l.proc.Process.Kill()
		<-done
	}
	<-l.logDone
}

// network is the sentry's description of its one interface, whose
// frames travel over sentryEnd.
func (l *localNetwork) network() *control.Network {
	return &control.Network{
		Path: "moat sandbox's user-space network",
		Links: []control.Link{{Name: "eth0", MAC: usernet.GuestMAC.String(), MTU: usernet.MTU,
			Addrs: []string{netip.PrefixFrom(usernet.Guest, usernet.Subnet.Bits()).String()}}},
		Route: []control.Route{{Dest: "0.0.0.0/0", Gateway: usernet.Gateway.String(), Link: "eth0"}},
	}
}

// hostResolver is the first nameserver of the host's resolv.conf, where
// the sandbox's queries go (resolv.conf(5): "nameserver ADDR", port 53).
func hostResolver(path string) (netip.AddrPort, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("the host's resolver: %w", err)
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 2 || f[0] != "nameserver" {
			continue
		}
		// An IPv6 link-local address may carry a zone (fe80::1%eth0).
		if a, err := netip.ParseAddr(f[1]); err == nil {
			return netip.AddrPortFrom(a, 53), nil
		}
	}
	return netip.AddrPort{}, fmt.Errorf("the host's resolver: no nameserver in %s", path)
}
