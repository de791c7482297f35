package main

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/moat-sandbox/moat/internal/bundle"
	"github.com/moat-sandbox/moat/internal/cgroups"
	"github.com/moat-sandbox/moat/internal/control"
	"github.com/moat-sandbox/moat/internal/state"
)

var execCommand = &command{
	name:           "exec",
	args:           "<container-id> <command> [args...]",
	minArgs:        1,
	maxArgs:        -1,
	argsEndOptions: true,
	failStatus:     255, // runc's exec fails with 255, which no guest status can be taken for
	summary:        "run a new process inside a running container",
	detail: `
The process starts in the container's sandbox, on its kernel: its parent is
outside the sandbox as init's is (getppid gives 0), and it leads a session of
its own. Without --process it is the container's config.json process with the
command given, the options below applied, and no terminal unless --tty.

In the foreground moat passes on the signals it receives and exits with the
process's status (128+N if it died of signal N). With --detach, moat leaves
behind a small host process that stands for it: its pid goes to --pid-file, it
passes on the signals it receives, exits with the process's status, and
killing it kills the process. Options end at the container id: what follows
is the command, with its own flags.`,
	setup: func(o *options) func(*globalOptions, []string) error {
		var eo execOptions
		o.String(&eo.consoleSocket, "console-socket", "PATH", "", "unix socket that receives the master end of the process's terminal")
		o.String(&eo.cwd, "cwd", "DIR", "", "working directory in the container")
		o.Strings(&eo.env, "env,e", "NAME=VALUE", "add an environment variable")
		o.Bool(&eo.tty, "tty,t", "give the process a terminal")
		o.String(&eo.user, "user,u", "UID[:GID]", "", "run as this user (numeric ids)")
		o.Strings(&eo.gids, "additional-gids,g", "GID", "add a supplementary group")
		o.String(&eo.processFile, "process,p", "FILE", "", "the process, as the JSON of config.json's process")
		o.Bool(&eo.detach, "detach,d", "return once the process runs")
		o.String(&eo.pidFile, "pid-file", "FILE", "", "write the process's host pid to FILE")
		o.String(&eo.processLabel, "process-label", "LABEL", "", "accepted for compatibility with runc; moat has no SELinux labels")
		o.String(&eo.apparmor, "apparmor", "PROFILE", "", "accepted for compatibility with runc; moat has no AppArmor profiles")
		o.Bool(&eo.noNewPrivs, "no-new-privs", "set no_new_privs for the process")
		o.Strings(&eo.caps, "cap,c", "CAP", "add a capability to the process's sets")
		o.Int(&eo.preserveFDs, "preserve-fds", "N", 0, "pass N more descriptors (3 onwards, after those of $LISTEN_FDS) to the process")
		o.String(&eo.cgroup, "cgroup", "PATH", "", "accepted for compatibility with runc; the sandbox has one cgroup")
		o.Bool(&eo.ignorePaused, "ignore-paused", "accepted for compatibility with runc; a paused sandbox runs nothing, so exec waits for resume")
		return func(g *globalOptions, args []string) error {
			eo.noNewPrivsSet = o.isSet("no-new-privs")
			return execProcess(g, args[0], args[1:], eo)
		}
	},
}

type execOptions struct {
	consoleSocket, cwd, user, processFile, pidFile string
	processLabel, apparmor, cgroup                 string
	env, gids, caps                                []string
	tty, detach, noNewPrivs, noNewPrivsSet         bool
	ignorePaused                                   bool
	preserveFDs                                    int
}

// execFirstAnswer bounds the wait for the sentry to load the program.
const execFirstAnswer = readyTimeout

func execProcess(g *globalOptions, id string, args []string, eo execOptions) error {
	if eo.preserveFDs < 0 {
		return fmt.Errorf("--preserve-fds %d: not a count", eo.preserveFDs)
	}
	pidFile := eo.pidFile
	if pidFile != "" {
		var err error
		if pidFile, err = filepath.Abs(pidFile); err != nil {
			return fmt.Errorf("pid file: %w", err)
		}
	}
	dir, c, err := openContainer(g, id)
	if err != nil {
		return err
	}
	locked := true
	defer func() {
		if locked {
			dir.Close()
		}
	}()
	status := c.Status()
	if status == state.Paused && eo.ignorePaused {
		status = state.Running
	}
	if err := state.CheckExec(status); err != nil {
		return err
	}
	p, err := execSpec(c, args, eo)
	if err != nil {
		return err
	}
	if err := checkConsole(p.Terminal, eo.detach, eo.consoleSocket); err != nil {
		return err
	}

	// The process's descriptors: stdio (or the terminal), then those
	// socket activation passed to this CLI, then --preserve-fds's.
	stdio := []*os.File{os.Stdin, os.Stdout, os.Stderr}
	var master *os.File
	if p.Terminal {
		m, replica, err := openPTY()
		if err != nil {
			return err
		}
		defer replica.Close()
		master = m
		defer func() {
			if master != nil {
				master.Close()
			}
		}()
		stdio = []*os.File{replica}
	}
	extra, env := listenFDs()
	p.Env = append(p.Env, env...)
	base := 3 + len(extra)
	for fd := base; fd < base+eo.preserveFDs; fd++ {
		extra = append(extra, os.NewFile(uintptr(fd), "preserved"))
	}
	if eo.detach && master != nil {
		err := sendConsole(eo.consoleSocket, master)
		master.Close()
		master = nil
		if err != nil {
			return err
		}
	}

	r, err := routeOf(g, dir, c)
	if err != nil {
		return err
	}
	defer r.close()
	conn, err := control.Dial(r.socket, controlTimeout)
	if err != nil {
		return err
	}
	defer conn.Close()
	req := control.Request{Op: control.OpExec, Container: r.container, Exec: &control.Exec{Process: p, Stdio: len(stdio)}}
	if err := conn.Send(req, append(stdio, extra...)...); err != nil {
		return fmt.Errorf("exec in container %s: %w", id, err)
	}
	conn.SetDeadline(time.Now().Add(execFirstAnswer))
	var resp control.Response
	if _, err := conn.Receive(&resp); err != nil {
		return fmt.Errorf("exec in container %s: the sentry did not answer: %w", id, err)
	}
	if err := resp.Err(); err != nil {
		return err
	}
	conn.SetDeadline(time.Time{})
	g.log.debugf("container %s: exec'd process %d", id, resp.PID)
	// Other commands may act on the container while the process runs.
	dir.Close()
	locked = false

	if eo.detach {
		pid, err := startExecWait(conn, nil)
		if err != nil {
			return err
		}
		if pidFile != "" {
			return writePIDFile(pidFile, pid)
		}
		return nil
	}
	if pidFile != "" {
		// In the foreground this CLI stands for the process, as the
		// process itself is runc exec's child.
		if err := writePIDFile(pidFile, os.Getpid()); err != nil {
			return err
		}
	}
	var term *terminalSession
	if master != nil {
		term = attachTerminal(master)
		master = nil
	}
	code := waitExec(conn, term)
	if term != nil {
		term.detach()
	}
	return exitStatus(code)
}

// execSpec is the process to start: --process's, or the container's own
// with runc exec's changes.
func execSpec(c *state.Container, args []string, eo execOptions) (*specs.Process, error) {
	var p specs.Process
	if eo.processFile != "" {
		data, err := os.ReadFile(eo.processFile)
		if err != nil {
			return nil, fmt.Errorf("process: %w", err)
		}
		if err := json.Unmarshal(data, &p); err != nil {
			return nil, fmt.Errorf("process: %s: %w", eo.processFile, err)
		}
	} else {
		b, err := bundle.Load(c.Bundle)
		if err != nil {
			return nil, fmt.Errorf("read the container's config: %w", err)
		}
		p = *b.Spec.Process
		if p.Capabilities != nil {
			caps := *p.Capabilities
			p.Capabilities = &caps
		}
		p.Args = args
		p.Terminal = eo.tty
		p.Env = append(append([]string(nil), p.Env...), eo.env...)
		if eo.cwd != "" {
			p.Cwd = eo.cwd
		}
		if eo.noNewPrivsSet {
			p.NoNewPrivileges = eo.noNewPrivs
		}
		if eo.user != "" {
			uid, gid, hasGID, err := parseUser(eo.user)
			if err != nil {
				return nil, err
			}
			p.User.UID = uid
			if hasGID {
				p.User.GID = gid
			}
		}
		for _, s := range eo.gids {
			gid, err := strconv.ParseUint(s, 10, 32)
			if err != nil {
				return nil, fmt.Errorf("parsing %s as int for gid failed: %w", s, err)
			}
			p.User.AdditionalGids = append(p.User.AdditionalGids, uint32(gid))
		}
		if len(eo.caps) > 0 {
			if p.Capabilities == nil {
				p.Capabilities = &specs.LinuxCapabilities{}
			}
			pc := p.Capabilities
			for _, cp := range eo.caps {
				pc.Bounding = append(pc.Bounding, cp)
				pc.Effective = append(pc.Effective, cp)
				pc.Permitted = append(pc.Permitted, cp)
				pc.Ambient = append(pc.Ambient, cp)
			}
		}
	}
	if len(p.Args) == 0 {
		return nil, errors.New("process args cannot be empty")
	}
	if p.Cwd == "" {
		p.Cwd = "/"
	}
	return &p, nil
}

// parseUser reads --user's UID[:GID], numbers only, as runc does.
func parseUser(s string) (uid, gid uint32, hasGID bool, err error) {
	u, gs, hasGID := strings.Cut(s, ":")
	n, err := strconv.ParseUint(u, 10, 32)
	if err != nil {
		return 0, 0, false, fmt.Errorf("parsing %s as int for uid failed: %w", u, err)
	}
	if !hasGID {
		return uint32(n), 0, false, nil
	}
	m, err := strconv.ParseUint(gs, 10, 32)
	if err != nil {
		return 0, 0, false, fmt.Errorf("parsing %s as int for gid failed: %w", gs, err)
	}
	return uint32(n), uint32(m), true, nil
}

// listenFDs are the descriptors systemd's socket activation passed to
// this CLI (LISTEN_FDS, when LISTEN_PID names it), from fd 3: they go to
// the process, which is told of them as runc tells it.
func listenFDs() ([]*os.File, []string) {
	n, err := strconv.Atoi(os.Getenv("LISTEN_FDS"))
	if err != nil || n <= 0 || os.Getenv("LISTEN_PID") != strconv.Itoa(os.Getpid()) {
		return nil, nil
	}
	files := make([]*os.File, n)
	for i := range files {
		files[i] = os.NewFile(uintptr(3+i), "listen-fd")
	}
	return files, []string{"LISTEN_FDS=" + strconv.Itoa(n), "LISTEN_PID=1"}
}

// waitExec passes on the signals this process receives to the exec'd
// process until the sentry reports its end, and returns its status. A
// sentry that goes without answering took the process with it: 137, as
// for a process killed with SIGKILL.
func waitExec(conn *control.Conn, term *terminalSession) int {
	signals := make(chan os.Signal, 32)
	signal.Notify(signals)
	defer signal.Stop(signals)
	done := make(chan int, 1)
	go func() {
		for {
			var resp control.Response
			if _, err := conn.Receive(&resp); err != nil {
				done <- 128 + int(syscall.SIGKILL)
				return
			}
			if resp.Exit != nil {
				done <- *resp.Exit
				return
			}
		}
	}()
	for {
		select {
		case code := <-done:
			return code
		case s := <-signals:
			sig := s.(syscall.Signal)
			switch sig {
			case syscall.SIGCHLD, syscall.SIGURG, syscall.SIGPIPE:
				continue
			case syscall.SIGWINCH:
				if term != nil {
					term.resize() // the sentry sees the new size itself
				}
				continue
			}
			conn.Send(control.Request{Op: control.OpSignal, Signal: int(sig)})
		}
	}
}

// execWaitCommand is the internal subcommand that stands for a detached
// exec's process (startExecWait).
const execWaitCommand = "exec-wait"

// startExecWait hands conn to a new host process that stands for the
// exec'd process (or a pod's container's init: joinPod), started in cg
// (nil: this CLI's cgroup), and returns its pid. Engines take a detached
// exec's pid file for the process's: conmon and containerd's shim wait
// for it as their child (it is reparented to them, subreapers both, once
// this CLI exits), read its exit status as the process's and signal it
// to signal the process.
func startExecWait(conn *control.Conn, cg *cgroups.Cgroup) (int, error) {
	f, pending, err := conn.Handover()
	if err != nil {
		return 0, fmt.Errorf("exec: %w", err)
	}
	defer f.Close()
	cmd := internalCommand(execWaitCommand)
	cmd.ExtraFiles = []*os.File{f}
	cmd.Env = append(os.Environ(), pendingEnv+"="+base64.StdEncoding.EncodeToString(pending))
	// Its own session: a signal for the caller's terminal is not for it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := startIn(cg, cmd); err != nil {
		return 0, fmt.Errorf("exec: start the process's stand-in: %w", err)
	}
	pid := cmd.Process.Pid
	cmd.Process.Release()
	return pid, nil
}

// pendingEnv passes exec-wait the bytes moat exec had read from the
// connection past the exec's answer (base64): the process's exit status
// may be among them.
const pendingEnv = "MOAT_CONTROL_PENDING"

// execWaitMain is `moat exec-wait`, with the exec's control connection
// on fd 3: it exits with the process's status.
func execWaitMain(args []string) int {
	if len(args) != 0 {
		fmt.Fprintln(os.Stderr, "moat exec-wait: takes no arguments (it is started by moat exec --detach)")
		return 2
	}
	pending, err := base64.StdEncoding.DecodeString(os.Getenv(pendingEnv))
	if err != nil {
		fmt.Fprintf(os.Stderr, "moat exec-wait: %s: %v\n", pendingEnv, err)
		return 255
	}
	os.Unsetenv(pendingEnv)
	conn, err := control.FileConn(os.NewFile(3, "control"), pending)
	if err != nil {
		fmt.Fprintf(os.Stderr, "moat exec-wait: %v\n", err)
		return 255
	}
	return waitExec(conn, nil)
}
