package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/internal/bundle"
	"github.com/moat-sandbox/moat/internal/control"
	"github.com/moat-sandbox/moat/internal/state"
	"github.com/moat-sandbox/moat/internal/usernet"
)

// localStatus is the exit status of moat sandbox's own failures (a wrong
// flag, a path that does not exist, a settings file that does not parse, a
// sandbox that could not start), as docker run uses 125: any other status
// is the command's.
const localStatus = 125

// localTimeoutStatus is the status of a command killed by --timeout, as
// timeout(1) exits.
const localTimeoutStatus = 124

// The statuses of a command that could not be run, as a shell's: not
// found, or found and not executable.
const (
	localNotFoundStatus  = 127
	localCannotRunStatus = 126
)

var localCommand = &command{
	name:           "sandbox",
	args:           "-- CMD [ARGS...] | --list | --rm NAME",
	minArgs:        0,
	maxArgs:        -1,
	argsEndOptions: true,
	failStatus:     localStatus,
	usageStatus:    localStatus,
	summary:        "run a command of this machine in a sandbox: its root read-only under an overlay, the current directory writable",
	detail: `
No bundle, no image: the sandbox's root is the host's own file system, read
only, under an overlay, so the command may write anywhere and none of it
reaches the host, except in the current directory and each --rw, which are
shared writable. $HOME is hidden (unless --home), and so are the credential
stores ~/.ssh ~/.aws ~/.config/gcloud ~/.docker ~/.netrc ~/.gnupg ~/.kube
whatever --home says. The network is loopback alone, unless --net (all
of it, as the caller) or --net-allow (only the names and addresses it
lists; DNS answers allowed names alone). The environment is PATH, HOME,
USER, TERM, LANG and their like, plus each --env; a variable whose name
holds TOKEN, KEY, SECRET, PASSWORD, PASSWD or CREDENTIAL is passed only
as --env NAME=VALUE.

stdin, stdout and stderr are the caller's (a terminal of the sandbox's own
when both stdin and stdout are terminals, resized with the caller's);
signals reach the command; moat exits with its status, 128+N if it died of
signal N, 124 if --timeout killed it, 127 if CMD was not found, 126 if it
could not be executed, and 125 if moat itself failed.

With --keep NAME, what the command wrote outside the shared directories
(the overlay, $HOME included) is saved when it ends, in
~/.local/state/moat/sandboxes/NAME, and the next run with --keep NAME
starts from it; --list shows the kept sandboxes, --rm NAME removes one.

Defaults come from ~/.config/moat/sandbox.toml (keys rw, ro, hide, home,
env, net, net_allow, memory, cpus, pids, timeout); flags add to its lists
and replace the rest. docs/agents.md says more.`,
	setup: func(o *options) func(*globalOptions, []string) error {
		var flags localPolicy
		var settingsPath, netAllow, keep, rm string
		var list bool
		o.Strings(&flags.RW, "rw", "PATH", "share PATH writable, as the current directory is")
		o.Strings(&flags.RO, "ro", "PATH", "share PATH read-only (it cannot be written even in the overlay)")
		o.Strings(&flags.Hide, "hide", "PATH", "make PATH empty inside")
		o.Bool(&flags.Home, "home", "show $HOME read-only (writes go to the overlay); the credential stores stay hidden")
		o.Strings(&flags.Env, "env,e", "NAME[=VALUE]", "pass the caller's NAME, or NAME=VALUE")
		o.Bool(&flags.Net, "net", "allow all of the network this machine reaches, as the caller")
		o.String(&netAllow, "net-allow", "DOMAIN,...", "", "allow only these domains, addresses and ports (NAME[:PORT], *.NAME, ADDR, CIDR), as docs/network.md's allowlist")
		o.String(&flags.Memory, "memory", "BYTES", "", "memory limit, with a k, m or g suffix (default half the host's memory)")
		o.fs.Func("cpus", "", func(v string) (err error) {
			flags.CPUs, err = strconv.ParseFloat(v, 64)
			return err
		})
		o.help = append(o.help, optionHelp{"--cpus N", "CPU limit, in CPUs (default none)"})
		o.fs.Func("pids", "", func(v string) (err error) {
			flags.PIDs, err = strconv.ParseInt(v, 10, 64)
			return err
		})
		o.help = append(o.help, optionHelp{"--pids N", fmt.Sprintf("limit of processes and threads (default %d)", defaultPIDs)})
		o.String(&flags.Timeout, "timeout", "DURATION", "", "kill the command after DURATION (90s, 10m) and exit 124")
		o.String(&settingsPath, "settings", "FILE", "", "the settings file (default ~/.config/moat/sandbox.toml)")
		o.String(&keep, "keep", "NAME", "", "start from the kept sandbox NAME's files, and keep what the command writes for the next run")
		o.Bool(&list, "list", "list the kept sandboxes")
		o.String(&rm, "rm", "NAME", "", "remove the kept sandbox NAME")
		return func(g *globalOptions, args []string) error {
			if netAllow != "" {
				flags.NetAllow = strings.Split(netAllow, ",")
			}
			h, err := currentHost()
			if err != nil {
				return err
			}
			h.keptRoot = keptRoot(h.environ, h.home)
			switch {
			case list && o.isSet("rm"):
				return flagErr("--list", "conflicts with --rm")
			case (list || o.isSet("rm")) && (len(args) > 0 || o.isSet("keep")):
				return flagErr(map[bool]string{true: "--list", false: "--rm"}[list], "manages kept sandboxes: it takes no command and no --keep")
			case list:
				return listKept(os.Stdout, h.keptRoot)
			case o.isSet("rm"):
				return removeKept(h.keptRoot, rm)
			case o.isSet("keep"):
				if err := checkKeepName("--keep", keep); err != nil {
					return err
				}
				h.keep = true
			}
			path, required := settingsPath, settingsPath != ""
			if !required {
				path = defaultSettingsPath(h.environ, h.home)
			}
			p, err := loadSettings(path, required)
			if err != nil {
				return err
			}
			p = mergePolicy(p, flags, o.isSet)
			if h.keep {
				return runKept(g, p, h, keep, args)
			}
			return runLocal(g, p, h, args, nil)
		}
	},
}

// mergePolicy puts the flags over the settings: lists are joined, the
// others replaced when their flag was given.
func mergePolicy(settings, flags localPolicy, isSet func(string) bool) localPolicy {
	p := settings
	p.RW = append(p.RW, flags.RW...)
	p.RO = append(p.RO, flags.RO...)
	p.Hide = append(p.Hide, flags.Hide...)
	p.Env = append(p.Env, flags.Env...)
	if isSet("home") {
		p.Home = flags.Home
	}
	if isSet("net") {
		p.Net = flags.Net
	}
	if isSet("net-allow") {
		p.NetAllow = flags.NetAllow
	}
	if isSet("memory") {
		p.Memory = flags.Memory
	}
	if isSet("cpus") {
		p.CPUs = flags.CPUs
	}
	if isSet("pids") {
		p.PIDs = flags.PIDs
	}
	if isSet("timeout") {
		p.Timeout = flags.Timeout
	}
	return p
}

// currentHost is the caller's side: its directory, home, ids, environment
// and the host's memory.
func currentHost() (localHost, error) {
	cwd, err := os.Getwd()
	if err != nil {
		return localHost{}, fmt.Errorf("the current directory: %w", err)
	}
	home, _ := os.UserHomeDir()
	if home != "" {
		home = filepath.Clean(home)
	}
	return localHost{cwd: cwd, home: home, uid: os.Geteuid(), gid: os.Getegid(), environ: os.Environ(), memTotal: hostMemory()}, nil
}

// hostMemory is MemTotal of /proc/meminfo in bytes, 0 if unknown.
func hostMemory() int64 {
	data, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "MemTotal:"); ok {
			f := strings.Fields(rest)
			if n, err := strconv.ParseInt(f[0], 10, 64); err == nil && len(f) == 2 && f[1] == "kB" {
				return n << 10
			}
		}
	}
	return 0
}

// localID is the sandbox's container id: its state root is private, but
// its cgroup is made under the caller's, beside those of the caller's
// other runs.
func localID() string { return fmt.Sprintf("moat-sandbox-%d", os.Getpid()) }

// runKept runs args in the kept sandbox name, and keeps what it leaves if
// the sandbox ran (whatever the command's status, and when ^C, a signal or
// --timeout ended it); it says so on stderr when it could not.
func runKept(g *globalOptions, p localPolicy, h localHost, name string, args []string) error {
	k, err := openKept(h.keptRoot, name)
	if err != nil {
		return err
	}
	defer k.close()
	err = runLocal(g, p, h, args, k)
	var exit exitStatus
	if !errors.As(err, &exit) && err != nil {
		return err // the sandbox did not run: the state is as it was
	}
	// The command is over: a ^C now would only cut the commit short.
	signal.Ignore(unix.SIGINT, unix.SIGTERM, unix.SIGHUP, unix.SIGQUIT)
	defer signal.Reset(unix.SIGINT, unix.SIGTERM, unix.SIGHUP, unix.SIGQUIT)
	if cerr := k.commit(); cerr != nil {
		previous := "the previous state stays"
		if k.load == nil {
			previous = "nothing was kept"
		}
		fmt.Fprintf(os.Stderr, "moat: sandbox: --keep %s: not saved (%v): %s\n", name, cerr, previous)
	}
	return err
}

// runLocal runs args in a sandbox under policy p, from and into the kept
// sandbox k if it is not nil. Its bundle and state live in a private
// directory that it removes however the run ends.
func runLocal(g *globalOptions, p localPolicy, h localHost, args []string, k *keptSandbox) (err error) {
	timeout, err := localTimeout(p.Timeout)
	if err != nil {
		return err
	}
	private, err := os.MkdirTemp("", "moat-sandbox-")
	if err != nil {
		return fmt.Errorf("private directory: %w", err)
	}
	defer os.RemoveAll(private)
	h.private = private
	h.emptyFile = filepath.Join(private, "empty")
	if err := os.WriteFile(h.emptyFile, nil, 0o444); err != nil {
		return fmt.Errorf("private directory: %w", err)
	}
	h.resolvConf = filepath.Join(private, "resolv.conf")
	if err := os.WriteFile(h.resolvConf, []byte(usernet.ResolvConf), 0o444); err != nil {
		return fmt.Errorf("private directory: %w", err)
	}
	spec, overlayHidden, err := localSpec(p, h, args, isTerminal(os.Stdin) && isTerminal(os.Stdout))
	if err != nil {
		return err
	}
	bundleDir := filepath.Join(private, "bundle")
	if err := os.Mkdir(bundleDir, 0o700); err != nil {
		return fmt.Errorf("private directory: %w", err)
	}
	data, err := json.Marshal(spec)
	if err != nil {
		return fmt.Errorf("encode the sandbox's config: %w", err)
	}
	if err := os.WriteFile(filepath.Join(bundleDir, bundle.ConfigName), data, 0o600); err != nil {
		return fmt.Errorf("private directory: %w", err)
	}

	lg := *g
	lg.root = filepath.Join(private, "state")
	lg.rootfsWrites = bundle.WritesOverlay
	if k != nil {
		lg.keep = &localKeep{load: k.load, save: k.save, setup: control.Keep{Load: k.load != nil}}
		for _, d := range overlayHidden {
			// As the tmpfs it stands for: the caller's, 0755.
			lg.keep.setup.Hide = append(lg.keep.setup.Hide, control.KeepDir{Path: d, Mode: 0o755, UID: uint32(h.uid), GID: uint32(h.gid)})
		}
	}
	if p.Net || len(p.NetAllow) > 0 {
		// create needs the host's resolver too, but would name the
		// annotation moat sandbox wrote rather than the flag.
		flag := "--net-allow"
		if p.Net {
			flag = "--net"
		}
		if _, err := hostResolver("/etc/resolv.conf"); err != nil {
			return flagErr(flag, "%v", err)
		}
	}
	if p.Net {
		fmt.Fprintln(os.Stderr, "moat: sandbox: --net: the command may reach every address this machine can, as the caller")
	}
	var timedOut atomic.Bool
	if timeout > 0 {
		timer := time.AfterFunc(timeout, func() {
			timedOut.Store(true)
			if err := killLocal(lg.root, localID()); err != nil {
				g.log.debugf("sandbox: kill at the timeout: %v", err)
			}
		})
		defer timer.Stop()
	}
	err = runContainer(&lg, localID(), runOptions{create: createOptions{bundleDir: bundleDir}})
	var exit exitStatus
	if timedOut.Load() && errors.As(err, &exit) && int(exit) == 128+int(unix.SIGKILL) {
		fmt.Fprintf(os.Stderr, "moat: sandbox: %s killed after --timeout %s\n", args[0], timeout)
		return exitStatus(localTimeoutStatus)
	}
	var answer *control.Error
	if errors.As(err, &answer) && answer.Unrunnable {
		status := localCannotRunStatus
		if answer.Errno == unix.ENOENT || answer.Errno == unix.ENOTDIR {
			status = localNotFoundStatus
		}
		return &failure{err: err, status: status}
	}
	return err
}

// killLocal kills the sandbox whose state root is root, through its
// control socket, named through a descriptor of its directory: a unix
// socket's path holds at most 107 bytes, and $TMPDIR may be long.
func killLocal(root, id string) error {
	dir, err := os.Open(filepath.Join(root, id))
	if err != nil {
		return err
	}
	defer dir.Close()
	socket := fmt.Sprintf("/proc/self/fd/%d/%s", dir.Fd(), state.ControlSocketName)
	return control.Call(socket, control.Request{Op: control.OpKill, Signal: int(unix.SIGKILL), All: true}, controlTimeout)
}

// isTerminal reports whether f is a terminal.
func isTerminal(f *os.File) bool {
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}
