// Command moat is the sandbox runtime's one binary: the OCI command line
// that anything able to drive runc can drive (create, start, state, kill,
// delete, run, list, spec), plus two internal subcommands that `moat create`
// re-executes: `boot`, the sentry that is the sandbox's kernel, and `gofer`,
// the only process that opens the sandbox's host files.
//
// The CLI side is short-lived and trusted. It must never run guest code or
// open files on the guest's behalf, and it must leave nothing behind when a
// command fails: no process, no socket, no state directory.

// The Go runtime would keep the cgroup's CPU limit files open for good and
// re-read them and the CPU affinity every second to adjust GOMAXPROCS; a
// confined sentry opens no file, and holds no host file it does not need.
//
//go:debug containermaxprocs=0
//go:debug updatemaxprocs=0
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/moat-sandbox/moat/internal/bundle"
	"github.com/moat-sandbox/moat/internal/control"
)

// version is moat's release, set at build time with
// -ldflags "-X main.version=...".
var version = "0.1.0-dev"

// globalOptions are the options before the subcommand, as runc's.
type globalOptions struct {
	root          string
	logPath       string
	logFormat     string
	debug         bool
	systemdCgroup bool
	platform      string
	rootfsWrites  string
	log           *logger
	// keep, set by moat sandbox --keep alone, is where the overlay's
	// upper layer comes from and goes to (local_keep.go).
	keep *localKeep
}

// localKeep is a kept sandbox's files for one run, and its Setup.Keep.
type localKeep struct {
	load, save *os.File // load nil: a first run
	setup      control.Keep
}

func main() {
	os.Exit(moatMain(os.Args[1:]))
}

// moatMain runs the command line in args and returns the exit status.
func moatMain(args []string) int {
	// The internal subcommands are re-executions by `moat create`: they take
	// no global options and are not listed in the help.
	if len(args) > 0 {
		switch args[0] {
		case "boot":
			return bootMain(args[1:])
		case "gofer":
			return goferMain(args[1:])
		case execWaitCommand:
			return execWaitMain(args[1:])
		case usernetCommand:
			return usernetMain(args[1:])
		}
	}

	var g globalOptions
	var showVersion bool
	o := newOptions("moat")
	o.String(&g.root, "root", "DIR", "/run/moat", "directory that holds the state of containers")
	o.String(&g.logPath, "log", "FILE", "", "also append errors (and with --debug, debug lines) to FILE; the sentry and gofer log there too")
	o.String(&g.logFormat, "log-format", "FORMAT", "text", "format of the --log file: text or json")
	o.Bool(&g.debug, "debug", "log debug lines")
	o.Bool(&g.systemdCgroup, "systemd-cgroup", "linux.cgroupsPath is systemd's slice:prefix:name; moat makes the unit's cgroup itself, where systemd would")
	o.String(&g.platform, "platform", "NAME", control.PlatformSystrap, "how the sentry runs guest code: systrap (stub processes trapped with seccomp) or kvm (a KVM virtual machine; needs /dev/kvm)")
	o.String(&g.rootfsWrites, "rootfs-writes", "MODE", bundle.WritesOverlay,
		"where writes to a writable root file system go: overlay (kept in the sandbox; the image stays as it was) or host (written to the bundle's rootfs); the annotation "+bundle.WritesAnnotation+" overrides it per container")
	o.Bool(&showVersion, "version,v", "print the version and exit")
	if err := o.fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			writeMainHelp(os.Stdout, o)
			return 0
		}
		return reportError(nil, "", fmt.Errorf("%v (see moat --help)", err))
	}
	if g.platform != control.PlatformSystrap && g.platform != control.PlatformKVM {
		return reportError(nil, "", fmt.Errorf("unknown --platform %q: moat supports systrap and kvm", g.platform))
	}
	if err := bundle.CheckWrites(g.rootfsWrites); err != nil {
		return reportError(nil, "", fmt.Errorf("--rootfs-writes %v", err))
	}
	if showVersion {
		fmt.Printf("moat version %s\nspec: %s\n", version, specs.Version)
		return 0
	}
	rest := o.fs.Args()
	if len(rest) == 0 {
		writeMainHelp(os.Stdout, o)
		return 0
	}
	if rest[0] == "help" {
		return help(rest[1:], o)
	}

	cmd := lookupCommand(rest[0])
	if cmd == nil {
		reportError(nil, "", fmt.Errorf("unknown command %q (see moat --help)", rest[0]))
		return unknownCommandStatus
	}
	run, err := cmd.prepare(rest[1:], os.Stdout)
	if errors.Is(err, errShowedHelp) {
		return 0
	}
	if err != nil {
		status := reportError(nil, cmd.name, err) // a wrong flag or argument
		if cmd.usageStatus != 0 {
			status = cmd.usageStatus
		}
		return status
	}
	log, err := openLog(g.logPath, g.logFormat, g.debug)
	if err != nil {
		return reportError(nil, cmd.name, err)
	}
	defer log.close()
	g.log = log

	err = run(&g)
	var exit exitStatus
	if errors.As(err, &exit) {
		return int(exit)
	}
	if err != nil {
		status := reportError(log, cmd.name, err)
		var failed *failure
		switch {
		case errors.As(err, &failed):
			status = failed.status
		case cmd.failStatus != 0:
			status = cmd.failStatus
		}
		return status
	}
	return 0
}

// failure is an error reported as any other, with a status of its own
// rather than the command's failStatus: `moat sandbox` exits 127 for a
// command that is not there, as a shell does.
type failure struct {
	err    error
	status int
}

func (f *failure) Error() string { return f.err.Error() }
func (f *failure) Unwrap() error { return f.err }

// unknownCommandStatus is runc's exit status for a command it does not
// know (its CLI library's "No help topic").
const unknownCommandStatus = 3

// exitStatus is returned by a command that ends with a status of its own
// rather than an error: `moat run` exits with the container's.
type exitStatus int

func (e exitStatus) Error() string { return fmt.Sprintf("exit status %d", int(e)) }

// reportError prints err as one line on stderr, logs it and returns the exit
// status for a failed command.
func reportError(log *logger, cmdName string, err error) int {
	msg := oneLine(err.Error())
	log.errorLine(msg)
	if cmdName != "" {
		fmt.Fprintf(os.Stderr, "moat: %s: %s\n", cmdName, msg)
	} else {
		fmt.Fprintf(os.Stderr, "moat: %s\n", msg)
	}
	return 1
}

// oneLine folds a message onto one line: tools read the first line of
// stderr, and a message from deeper down may hold newlines.
func oneLine(s string) string {
	return strings.Join(strings.Fields(strings.ReplaceAll(s, "\n", " ")), " ")
}

func help(args []string, global *options) int {
	if len(args) == 0 {
		writeMainHelp(os.Stdout, global)
		return 0
	}
	cmd := lookupCommand(args[0])
	if cmd == nil {
		return reportError(nil, "help", fmt.Errorf("no command %q (see moat --help)", args[0]))
	}
	o := newOptions(cmd.name)
	cmd.setup(o)
	cmd.writeHelp(os.Stdout, o)
	return 0
}

func writeMainHelp(w io.Writer, global *options) {
	fmt.Fprint(w, `moat - a sandbox runtime for untrusted code, driven like runc

Each container runs on its own user-space kernel (the sentry), so that the
guest's system calls never reach the host kernel; its files come only through
a gofer confined to the bundle's root filesystem.

Usage: moat [global options] <command> [options] [arguments]

Commands:
`)
	for _, c := range commands {
		fmt.Fprintf(w, "  %-10s %s\n", c.name, c.summary)
	}
	fmt.Fprintf(w, "  %-10s %s\n", "help", "show the help of a command")
	global.writeHelp(w, "Global options")
	fmt.Fprint(w, "\nRun 'moat help <command>' or 'moat <command> --help' for a command's options.\n")
}
