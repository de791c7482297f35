package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"time"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/moat-sandbox/moat/internal/bundle"
	"github.com/moat-sandbox/moat/internal/cgroups"
	"github.com/moat-sandbox/moat/internal/confine"
	"github.com/moat-sandbox/moat/internal/control"
	"github.com/moat-sandbox/moat/internal/state"
	"github.com/moat-sandbox/moat/platform/kvm"
	"github.com/moat-sandbox/moat/sentry/boot"
	"golang.org/x/sys/unix"
)

// How long the CLI waits for a sandbox's processes.
const (
	readyTimeout   = 30 * time.Second // Setup to Response: the sentry loads the program through the gofer
	controlTimeout = 10 * time.Second // one start or kill request
	killGrace      = 2 * time.Second  // for the sentry to deliver SIGKILL and exit before the host kills it
	exitTimeout    = 10 * time.Second // for a host-killed process to be gone
)

// selfExe re-executes this binary. The path is resolved by the kernel at
// exec time, so an upgrade of the moat file on disk cannot mix versions
// within one sandbox.
const selfExe = "/proc/self/exe"

// sandbox is a gofer and sentry, and moat usernet for a user-space
// network, that this CLI started; all are its children until it exits.
// cgroup holds them, and the stubs.
type sandbox struct {
	gofer   *exec.Cmd
	sentry  *exec.Cmd
	usernet *exec.Cmd
	cgroup  *cgroups.Cgroup
}

// internalCommand prepares a re-execution of moat as one of its internal
// subcommands, with nothing of the caller's environment or working
// directory: none of it belongs in the sandbox.
func internalCommand(sub string, args ...string) *exec.Cmd {
	return &exec.Cmd{
		Path: selfExe,
		Args: append([]string{"moat", sub}, args...),
		Env:  []string{},
		Dir:  "/",
	}
}

// startSandbox starts the gofer and the sentry of container c, hands the
// sentry its Setup and waits until the sentry says the program is loaded.
// stdio becomes the sentry's, and so the guest's, fds 0, 1 and 2. Both
// start in the container's cgroup, inner (cgroupInner), made first. It
// saves a creating record naming the cgroup and both processes as soon as
// they exist, so that a CLI killed during the hand-over still leaves `moat
// delete` enough to clean up. On error nothing it started remains.
func startSandbox(g *globalOptions, dir *state.Dir, c *state.Container, b *bundle.Bundle, inner string, stdio [3]*os.File) (_ *sandbox, err error) {
	// Descriptors this CLI inherited without close-on-exec (a shell's, a
	// supervisor's) would pass to the gofer and the sentry, which get
	// only what ExtraFiles names.
	if err := unix.CloseRange(3, ^uint(0), unix.CLOSE_RANGE_CLOEXEC); err != nil {
		return nil, fmt.Errorf("mark inherited descriptors close-on-exec: %w", err)
	}
	gs, err := planGofer(g, b)
	if err != nil {
		return nil, err
	}
	defer gs.close()
	controlListener, err := listenUnix(dir.ControlSocket(), "control socket")
	if err != nil {
		return nil, err
	}
	defer controlListener.Close()
	cliSetupEnd, sentrySetupEnd, err := socketPair(unix.SOCK_STREAM)
	if err != nil {
		return nil, fmt.Errorf("setup socket: %w", err)
	}
	defer cliSetupEnd.Close()
	defer sentrySetupEnd.Close()

	sb := &sandbox{}
	defer func() {
		if err != nil {
			sb.stop()
		}
	}()

	writes := gs.writes
	sentryFDs := map[int]*os.File{
		control.BootGoferFD:   gs.sentryEnds[0],
		control.BootControlFD: controlListener,
		control.BootSetupFD:   sentrySetupEnd,
	}
	var overlayMemory int64
	if !b.Spec.Root.Readonly && writes == bundle.WritesOverlay {
		if overlayMemory, err = b.OverlayMemory(); err != nil {
			return nil, err
		}
		spill, err := dir.SpillFile()
		if err != nil {
			return nil, err
		}
		defer spill.Close()
		sentryFDs[control.BootSpillFD] = spill
	}
	var keep *control.Keep
	if g.keep != nil {
		if b.Spec.Root.Readonly || writes != bundle.WritesOverlay {
			return nil, fmt.Errorf("keep: the root is not under an overlay")
		}
		keep = &g.keep.setup
		sentryFDs[control.BootKeepSaveFD] = g.keep.save
		if g.keep.load != nil {
			sentryFDs[control.BootKeepLoadFD] = g.keep.load
		}
	}
	if g.log.file != nil {
		// The sentry runs as a user who may not open it.
		sentryFDs[control.BootLogFD] = g.log.file
	}
	if g.platform == control.PlatformKVM {
		// Nor this: /dev/kvm is root's.
		dev, err := os.OpenFile(kvm.Device, os.O_RDWR, 0)
		if err != nil {
			return nil, kvm.Unusable(fmt.Errorf("kvm: %w", err))
		}
		defer dev.Close()
		sentryFDs[control.BootKVMFD] = dev
	}
	for i := range b.Binds {
		sentryFDs[control.BootBindFD0+i] = gs.sentryEnds[1+i]
	}
	// The namespace's packet sockets (netns.go), before anything starts;
	// its addresses become the sandbox's once the sentry is ready. Or the
	// link of a user-space network, whose host side starts with the
	// sentry.
	un, err := userNetworkOf(b.Spec)
	if err != nil {
		return nil, err
	}
	sentrySpec := b.Spec
	network, netFiles, err := openNetwork(b.Spec)
	if err != nil {
		return nil, err
	}
	if un != nil {
		if err := un.openLink(); err != nil {
			return nil, err
		}
		defer un.hostEnd.Close()
		network, netFiles, sentrySpec = un.network(), []*os.File{un.sentryEnd}, un.sentrySpec(b.Spec)
	}
	for i, f := range netFiles {
		defer f.Close()
		sentryFDs[control.NetFD(len(b.Binds), i)] = f
	}
	if sb.cgroup, err = makeCgroup(g, inner, b.Spec.Linux); err != nil {
		return nil, err
	}
	c.Cgroup = sb.cgroup
	if err := dir.Save(c); err != nil {
		return nil, err
	}
	setup := control.Setup{
		ID:        c.ID,
		Bundle:    b.Dir,
		Spec:      sentrySpec,
		LogPath:   g.log.path,
		LogFormat: g.logFormat,
		Debug:     g.debug,
		Binds:     gs.binds,

		RootfsWrites:  writes,
		OverlayMemory: overlayMemory,
		Keep:          keep,
		Platform:      g.platform,
		HostCalls:     os.Getenv(hostCallsEnv),
		Network:       network,
	}
	if os.Geteuid() == 0 {
		setup.SentryUser = &[2]uint32{uint32(confine.Nobody.Host), uint32(confine.Nobody.HostGroup)}
	}

	// The gofer and the sentry start side by side, the sentry's Setup at
	// once: it boots (decodes the Setup, confines itself, starts its
	// platform) while the gofer starts, and asks the gofer for nothing
	// before it builds the guest's tree; its requests wait in the socket
	// until the gofer serves them. The guest's tree waited for a gofer
	// started after the sentry (each start, a clone into new namespaces
	// and two execs, takes 1.5-3 ms). Every return below waits for the
	// gofer's start first, so that sb.stop sees it.
	type started struct {
		cmd *exec.Cmd
		err error
	}
	goferStart := make(chan started, 1)
	go func() {
		cmd, err := startGofer(g, sb.cgroup, gs)
		goferStart <- started{cmd, err}
	}()
	var goferErr error
	awaitGofer := func() error {
		if goferStart != nil {
			s := <-goferStart
			sb.gofer, goferErr, goferStart = s.cmd, s.err, nil
		}
		return goferErr
	}
	defer awaitGofer()
	sb.sentry = internalCommand("boot")
	sb.sentry.Stdin, sb.sentry.Stdout, sb.sentry.Stderr = stdio[0], stdio[1], stdio[2]
	sb.sentry.ExtraFiles = childFDs(sentryFDs)
	sb.sentry.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if b.Spec.Process != nil && b.Spec.Process.Terminal {
		// The console: the sentry leads the session its host terminal
		// controls, so that a resize reaches it as SIGWINCH (console.go).
		sb.sentry.SysProcAttr = consoleProcAttr()
	}
	confine.SentryProcAttr(sb.sentry.SysProcAttr, sandboxIDs(), os.Geteuid() == 0)
	if err := startConfined(sb.cgroup, sb.sentry, 0); err != nil {
		return nil, fmt.Errorf("start sentry: %w", err)
	}
	// The sentry holds its end now. The CLI's copy must go at once: while
	// it holds it, a sentry that dies would never be noticed. (The
	// deferred Closes then do nothing.)
	sentrySetupEnd.Close()
	setupConn, err := sendSetup(cliSetupEnd, setup)
	if err != nil {
		return nil, sb.sentryQuit(err)
	}
	defer setupConn.Close()

	if err := awaitGofer(); err != nil {
		return nil, err
	}
	// The children hold their ends now; the CLI's copies go, so that each
	// side sees the other's end close when it exits.
	controlListener.Close()
	gs.close()
	if un != nil {
		// Off the sentry's and the gofer's way: its start overlaps the
		// sentry's boot, and the sentry's first frames wait in the link
		// until it reads them.
		if err := un.start(g, sb.cgroup, sb.sentry.Process.Pid, dir.UsernetSocket()); err != nil {
			return nil, err
		}
		sb.usernet = un.proc
	}
	g.log.debugf("container %s: gofer pid %d, sentry pid %d", c.ID, sb.gofer.Process.Pid, sb.sentry.Process.Pid)

	// Both are unreaped children: their pids cannot have been reused yet.
	if c.Gofer, err = state.Identify(sb.gofer.Process.Pid); err != nil {
		return nil, fmt.Errorf("gofer: %w", err)
	}
	if c.Sentry, err = state.Identify(sb.sentry.Process.Pid); err != nil {
		return nil, fmt.Errorf("sentry: %w", err)
	}
	if sb.usernet != nil {
		if c.Usernet, err = state.Identify(sb.usernet.Process.Pid); err != nil {
			return nil, fmt.Errorf("usernet: %w", err)
		}
	}
	if err := dir.Save(c); err != nil {
		return nil, err
	}
	if err := awaitReady(setupConn); err != nil {
		return nil, sb.sentryQuit(err)
	}
	if un != nil {
		if err := un.waitReady(); err != nil {
			return nil, err
		}
	}
	if network != nil && un == nil {
		if err := takeAddresses(network); err != nil {
			return nil, err
		}
	}
	return sb, nil
}

// hostCallsEnv, set to "log" in the CLI's environment, starts the sandbox's
// sentry and gofer with seccomp filters that log the host calls outside
// their allowlists instead of killing them: the audit mode the host-call
// audit runs the test suites in (docs/security.md). Never for production.
const hostCallsEnv = "MOAT_HOST_CALLS"

// goferPrivilegeArgs are the gofer's --caps and --user for a container
// whose process is p (confine.GoferPrivileges), and the capabilities
// --caps keeps.
func goferPrivilegeArgs(p *specs.Process) ([]string, uint64) {
	var bounding uint64
	if p.Capabilities != nil {
		for _, name := range p.Capabilities.Bounding {
			if i := slices.Index(boot.CapNames, strings.TrimPrefix(name, "CAP_")); i >= 0 {
				bounding |= 1 << i
			}
		}
	}
	keep, ids := confine.GoferPrivileges(bounding, confine.IDs{UID: p.User.UID, GID: p.User.GID, Groups: p.User.AdditionalGids})
	args := []string{"--caps", fmt.Sprintf("%#x", keep)}
	// A rootless gofer is the caller already, and its namespace maps no
	// other user to become.
	if ids != nil && os.Geteuid() == 0 {
		args = append(args, "--user", idsArg(*ids))
	}
	return args, keep
}

// sandboxIDs is the host user and group the sandbox's processes are: the
// overflow ids when root starts it (which the sentry becomes, Setup's
// SentryUser), the caller's own otherwise.
func sandboxIDs() confine.IDMap {
	if os.Geteuid() == 0 {
		return confine.Nobody
	}
	return confine.IDMap{Host: os.Geteuid(), HostGroup: os.Getegid()}
}

// errSentryQuit is a sentry that closed the setup socket without answering.
var errSentryQuit = errors.New("the sentry quit before the sandbox was ready")

// sentryQuit adds to err, a failed hand-over, how the sentry ended when
// it quit: it is reaped here, and the rest of the sandbox stopped.
func (sb *sandbox) sentryQuit(err error) error {
	if !errors.Is(err, errSentryQuit) {
		return err
	}
	sb.stop()
	err = fmt.Errorf("%w (%v)", err, sb.sentry.ProcessState)
	if ws, ok := sb.sentry.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() && ws.Signal() == syscall.SIGSYS {
		err = fmt.Errorf("%w: %w", errSentryQuit, errSentryFiltered)
	}
	return err
}

// sendSetup sends setup over the CLI's end of the setup socket and says
// it is done by shutting down writing; the connection then carries the
// sentry's one answer (awaitReady), all within readyTimeout.
func sendSetup(conn *os.File, setup control.Setup) (*net.UnixConn, error) {
	fc, err := net.FileConn(conn)
	if err != nil {
		return nil, fmt.Errorf("setup socket: %w", err)
	}
	uc := fc.(*net.UnixConn)
	uc.SetDeadline(time.Now().Add(readyTimeout))
	if err := json.NewEncoder(uc).Encode(setup); err != nil {
		uc.Close()
		if errors.Is(err, syscall.EPIPE) || errors.Is(err, syscall.ECONNRESET) {
			return nil, errSentryQuit
		}
		return nil, fmt.Errorf("send setup to the sentry: %w", err)
	}
	if err := uc.CloseWrite(); err != nil {
		uc.Close()
		return nil, fmt.Errorf("send setup to the sentry: %w", err)
	}
	return uc, nil
}

// awaitReady reads the sentry's answer to its Setup.
func awaitReady(uc *net.UnixConn) error {
	var resp control.Response
	if err := json.NewDecoder(uc).Decode(&resp); err != nil {
		var netErr net.Error
		switch {
		case errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET):
			return errSentryQuit
		case errors.As(err, &netErr) && netErr.Timeout():
			return fmt.Errorf("the sentry did not report the sandbox ready within %s", readyTimeout)
		default:
			return fmt.Errorf("read the sentry's answer to setup: %w", err)
		}
	}
	return resp.Err()
}

// stop kills and reaps whatever of the sandbox was started, and removes
// its cgroup. Both are this CLI's children, so their pids are still
// theirs and need no checking.
func (sb *sandbox) stop() {
	for _, cmd := range []*exec.Cmd{sb.sentry, sb.gofer, sb.usernet} {
		if cmd != nil && cmd.Process != nil && cmd.ProcessState == nil {
			cmd.Process.Kill()
			cmd.Wait()
		}
	}
	sb.cgroup.Destroy(exitTimeout)
}

// socketPair returns both ends of a close-on-exec unix socket pair of type
// typ; a child receives one end through ExtraFiles.
func socketPair(typ int) (*os.File, *os.File, error) {
	fds, err := unix.Socketpair(unix.AF_UNIX, typ|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, nil, err
	}
	return os.NewFile(uintptr(fds[0]), "socketpair"), os.NewFile(uintptr(fds[1]), "socketpair"), nil
}

// listenControl binds and listens on the container's control socket. The
// CLI never accepts on it: the listening socket goes to the sentry, and
// later commands connect.
func listenUnix(path, what string) (*os.File, error) {
	fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	f := os.NewFile(uintptr(fd), what)
	err = unix.Bind(fd, &unix.SockaddrUnix{Name: path})
	if err == nil {
		// Whoever can connect can start and kill the container (or open
		// its network): only the owner may, and the mode is set before
		// anyone can connect.
		err = os.Chmod(path, 0o600)
	}
	if err == nil {
		err = unix.Listen(fd, unix.SOMAXCONN)
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	return f, nil
}

// childFDs lays out files for exec.Cmd.ExtraFiles so that the child finds
// each at the descriptor number it is keyed by (3 and up).
func childFDs(byFD map[int]*os.File) []*os.File {
	top := 0
	for fd := range byFD {
		top = max(top, fd)
	}
	files := make([]*os.File, top-2)
	for fd, f := range byFD {
		files[fd-3] = f
	}
	return files
}
