package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/internal/cgroups"
	"github.com/moat-sandbox/moat/internal/confine"
	"github.com/moat-sandbox/moat/internal/control"
	"github.com/moat-sandbox/moat/internal/usernet"
	"github.com/moat-sandbox/moat/sentry/net/netstack"
)

// userNetwork is the user-space network (internal/usernet) of a sandbox
// whose config asks for it with usernet.Annotation: moat sandbox's --net
// and --net-allow, and any bundle given to moat create (moat serve's
// sandboxes). Its host side, moat usernet (usernet.go), dials out as the
// sandbox's user, so that it works alike as root and rootless, with no
// network namespace to make. moat create starts it once the sentry runs,
// in the sandbox's cgroup, and it lives as long as the sentry does: it
// waits on a pidfd of the sentry, so that a sentry that exits or is
// killed (SIGKILL included) takes it along with no CLI left to say so,
// and delete kills it with the rest (state.Container.Usernet).
type userNetwork struct {
	allow    string         // the allowlist's entries; "" for all of the network
	upstream netip.AddrPort // the host's resolver
	// The link: the sentry's end (its control.NetFD) and moat usernet's.
	sentryEnd, hostEnd *os.File
	proc               *exec.Cmd
	ready              *os.File // its first line says how its start went
}

// The descriptors moat usernet gets: the link's host end, the pipe its
// first line goes to, a pidfd of the sentry, whose exit stops it, the
// --log file, if there is one, where it logs the destinations it
// refuses, and the listening socket where it takes a new allowlist
// (state.UsernetSocketName in the container's directory, its owner's
// alone: moat serve's network updates). The listener is the CLI's: moat
// usernet binds and listens nowhere.
const (
	usernetLinkFD   = 3
	usernetReadyFD  = 4
	usernetSentryFD = 5
	usernetLogFD    = 6
	usernetPolicyFD = confine.UsernetPolicyFD
)

// userNetworkOf reads the config's request for a user-space network: nil
// if it has none. A malformed request, or one beside a namespace path
// (two networks), fails here, before anything starts; so does a host
// without a resolver.
func userNetworkOf(spec *specs.Spec) (*userNetwork, error) {
	v, ok := spec.Annotations[usernet.Annotation]
	if !ok {
		return nil, nil
	}
	if v != usernet.AnnotationUser {
		return nil, fmt.Errorf("%s: %q: the one network it names is %q", usernet.Annotation, v, usernet.AnnotationUser)
	}
	if p := netnsPath(spec); p != "" {
		return nil, fmt.Errorf("%s: the config also joins the network namespace %s: a sandbox has one network", usernet.Annotation, p)
	}
	n := &userNetwork{}
	if allow, ok := spec.Annotations[netstack.EgressAnnotation]; ok {
		if _, err := netstack.ParseEgress(allow, nil); err != nil {
			return nil, err
		}
		n.allow = allow
	}
	var err error
	if n.upstream, err = hostResolver("/etc/resolv.conf"); err != nil {
		return nil, fmt.Errorf("%s: %w", usernet.Annotation, err)
	}
	return n, nil
}

// sentrySpec is the config the sentry gets: spec, with the network's
// resolver added to its allowlist.
func (n *userNetwork) sentrySpec(spec *specs.Spec) *specs.Spec {
	if n.allow == "" {
		return spec
	}
	s := *spec
	s.Annotations = map[string]string{}
	for k, v := range spec.Annotations {
		s.Annotations[k] = v
	}
	s.Annotations[netstack.EgressAnnotation] = usernet.SentryAllow(n.allow)
	return &s
}

// openLink makes the link, whose sentry end goes to the sentry.
func (n *userNetwork) openLink() (err error) {
	n.sentryEnd, n.hostEnd, err = usernet.Pair()
	return err
}

// start starts moat usernet in cgroup cg for the sentry, whose pid is
// still that of the CLI's unreaped child, taking allowlists on a socket
// at policyPath; waitReady says whether it serves the link.
func (n *userNetwork) start(g *globalOptions, cg *cgroups.Cgroup, sentryPID int, policyPath string) error {
	policy, err := listenUnix(policyPath, "usernet's policy socket")
	if err != nil {
		return err
	}
	defer policy.Close()
	pidfd, err := unix.PidfdOpen(sentryPID, 0)
	if err != nil {
		return fmt.Errorf("usernet: pidfd of the sentry: %w", err)
	}
	sentry := os.NewFile(uintptr(pidfd), "sentry-pidfd")
	defer sentry.Close()
	readyR, readyW, err := os.Pipe()
	if err != nil {
		return fmt.Errorf("usernet: %w", err)
	}
	defer readyW.Close()
	args := []string{"--upstream", n.upstream.String()}
	if n.allow != "" {
		args = append(args, "--allow", n.allow)
	}
	if os.Geteuid() == 0 {
		args = append(args, "--user", idsArg(confine.IDs{UID: uint32(confine.Nobody.Host), GID: uint32(confine.Nobody.HostGroup)}))
	}
	if mode := os.Getenv(hostCallsEnv); mode != "" {
		args = append(args, "--host-calls", mode) // the audit mode, as the sentry's and the gofer's
	}
	fds := map[int]*os.File{usernetLinkFD: n.hostEnd, usernetReadyFD: readyW, usernetSentryFD: sentry, usernetPolicyFD: policy}
	if g.log.file != nil {
		fds[usernetLogFD] = g.log.file
		args = append(args, "--log-format", g.logFormat)
	}
	n.proc = internalCommand(usernetCommand, args...)
	n.proc.ExtraFiles = childFDs(fds)
	// Its own session, so that the caller's ^C reaches the command alone;
	// the sentry's confinement, but in the host's network, to dial out.
	n.proc.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	confine.SentryProcAttr(n.proc.SysProcAttr, sandboxIDs(), os.Geteuid() == 0)
	n.proc.SysProcAttr.Cloneflags &^= syscall.CLONE_NEWNET
	if err := startConfined(cg, n.proc, 0); err != nil {
		readyR.Close()
		return fmt.Errorf("start usernet: %w", err)
	}
	n.hostEnd.Close()
	n.ready = readyR
	return nil
}

// waitReady waits for moat usernet's first line: usernetReady once it
// serves the link, or why it could not. A usernet that does not answer
// within readyTimeout is taken for one that could not.
func (n *userNetwork) waitReady() error {
	defer n.ready.Close()
	n.ready.SetReadDeadline(time.Now().Add(readyTimeout))
	sc := bufio.NewScanner(n.ready)
	line := "it quit"
	if sc.Scan() {
		line = sc.Text()
	} else if errors.Is(sc.Err(), os.ErrDeadlineExceeded) {
		line = "not ready in time"
	}
	if line != usernetReady {
		return fmt.Errorf("usernet: %s", line)
	}
	return nil
}

// network is the sentry's description of its one interface, whose
// frames travel over sentryEnd.
func (n *userNetwork) network() *control.Network {
	return &control.Network{
		Path: "moat's user-space network",
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
