package main

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/moat-sandbox/moat/internal/control"
	"github.com/moat-sandbox/moat/internal/seccomp"
	"golang.org/x/sys/unix"
)

// The test binary stands in for the sentry and the gofer: the CLI under test
// re-executes /proc/self/exe as `moat boot` and `moat gofer`, and TestMain
// sends those to fakeSentry and fakeGofer instead of the real ones. The
// fakes keep the contract of internal/control and check that the CLI keeps
// its side; a broken contract comes back to the CLI as a setup error, so the
// test that caused it fails.

// fakeGofer checks what the gofer is given, reports to the fake sentry
// over the gofer socket, says on stderr what it serves and then serves
// nothing until it is killed, so that tests see that delete kills a gofer
// that outlives its sentry.
func fakeGofer(args []string) int {
	report := "ok"
	if a, err := parseGoferArgs(args); err != nil {
		report = "gofer arguments: " + err.Error()
	} else if problem := goferContractProblem(); problem != "" {
		report = problem
	} else {
		fmt.Fprintf(os.Stderr, "fake gofer serves %s\n", a.rootfs)
	}
	unix.Write(control.GoferServeFD, []byte(report))
	for {
		time.Sleep(time.Hour)
	}
}

func goferContractProblem() string {
	if typ, err := unix.GetsockoptInt(control.GoferServeFD, unix.SOL_SOCKET, unix.SO_TYPE); err != nil || typ != unix.SOCK_SEQPACKET {
		return fmt.Sprintf("gofer fd %d is not a SOCK_SEQPACKET socket", control.GoferServeFD)
	}
	if sid, _ := unix.Getsid(0); sid != os.Getpid() {
		return "gofer is not in a session of its own"
	}
	if len(os.Environ()) != 0 {
		return fmt.Sprintf("gofer got an environment: %q", os.Environ())
	}
	return ""
}

// fakeSentry acts out its "program", named by process.args:
//
//	sleep            run until killed
//	exit N           on start, exit with status N
//	echo WORDS...    on start, print WORDS on stdout and exit 0
//	seccompkill      on start, make a host call its seccomp filter kills it
//	                 for, dying of SIGSYS (as the sentry's pid namespace's
//	                 init, it cannot die of a signal it sends itself)
//	not-found        answer setup with an error, as for a program missing from the rootfs
//	no-platform      answer setup with an error naming the platform asked for, as a sentry
//	                 whose platform cannot start (KVM without a usable /dev/kvm)
//	quit             exit 3 without answering setup
//	hang             never answer setup
//
// A kill request with signal N > 0 ends it with status 128+N, as the sentry
// ends when its init dies of N.
func fakeSentry() int {
	setupConn := os.NewFile(control.BootSetupFD, "setup")
	var setup control.Setup
	if err := json.NewDecoder(setupConn).Decode(&setup); err != nil {
		fmt.Fprintf(os.Stderr, "fake sentry: read setup: %v\n", err)
		return 2
	}
	program := setup.Spec.Process.Args
	answer := func(problem string) {
		json.NewEncoder(setupConn).Encode(control.Response{Error: problem})
		setupConn.Close()
	}
	if problem := sentryContractProblem(&setup); problem != "" {
		answer("fake sentry: " + problem)
		return 2
	}
	switch program[0] {
	case "not-found":
		answer(fmt.Sprintf("process.args[0] %q: program not found in the rootfs", program[0]))
		return 127
	case "no-platform":
		answer(fmt.Sprintf("platform %q cannot run here", setup.Platform))
		return 1
	case "quit":
		return 3
	case "hang":
		time.Sleep(time.Hour)
	}
	answer("")

	listener, err := net.FileListener(os.NewFile(control.BootControlFD, "control"))
	if err != nil {
		fmt.Fprintf(os.Stderr, "fake sentry: control socket: %v\n", err)
		return 2
	}
	for {
		conn, err := listener.Accept()
		if err != nil {
			return 2
		}
		var req control.Request
		if err := json.NewDecoder(conn).Decode(&req); err != nil {
			conn.Close()
			continue
		}
		json.NewEncoder(conn).Encode(control.Response{})
		conn.Close()
		switch {
		case req.Op == control.OpKill && req.Signal > 0:
			return 128 + req.Signal
		case req.Op == control.OpStart:
			if status, exits := runFakeProgram(program); exits {
				return status
			}
		}
	}
}

// runFakeProgram does what a started program does; exits says the sentry
// now ends with status.
func runFakeProgram(program []string) (status int, exits bool) {
	arg := func(i int) int {
		n, _ := strconv.Atoi(program[i])
		return n
	}
	switch program[0] {
	case "exit":
		return arg(1), true
	case "echo":
		for i, w := range program[1:] {
			if i > 0 {
				os.Stdout.WriteString(" ")
			}
			os.Stdout.WriteString(w)
		}
		os.Stdout.WriteString("\n")
		return 0, true
	case "seccompkill":
		killGetppid := []seccomp.Insn{
			seccomp.Stmt(seccomp.LdAbsW, seccomp.OffNr),
			seccomp.Jump(seccomp.JeqK, unix.SYS_GETPPID, 0, 1),
			seccomp.Stmt(seccomp.RetK, seccomp.ActKillProcess),
			seccomp.Stmt(seccomp.RetK, seccomp.ActAllow),
		}
		unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)
		seccomp.Install(killGetppid, 0)
		unix.Getppid()
		time.Sleep(time.Hour)
	}
	return 0, false
}

// sentryContractProblem checks what `moat boot` is promised: the setup, the
// descriptors, its own process group (with a terminal, the session the
// console controls), no environment, and the gofer at the other end of fd 3.
func sentryContractProblem(setup *control.Setup) string {
	switch {
	case setup.ID == "" || setup.Spec == nil || setup.Spec.Process == nil:
		return fmt.Sprintf("incomplete setup %+v", setup)
	case !filepath.IsAbs(setup.Bundle):
		return fmt.Sprintf("setup bundle %q is not absolute", setup.Bundle)
	case setup.LogPath != "" && !filepath.IsAbs(setup.LogPath):
		return fmt.Sprintf("setup log path %q is not absolute", setup.LogPath)
	case len(os.Environ()) != 0:
		return fmt.Sprintf("got an environment: %q", os.Environ())
	}
	if pgid, _ := unix.Getpgid(0); pgid != os.Getpid() {
		return "not in a process group of its own"
	}
	sid, _ := unix.Getsid(0)
	switch terminal := setup.Spec.Process.Terminal; {
	case terminal && sid != os.Getpid():
		return "terminal:true but not the leader of a session of its own"
	case terminal:
		// The console's host terminal controls that session, with the
		// sentry in the foreground: its resizes reach the sentry.
		if fg, err := unix.IoctlGetInt(0, unix.TIOCGPGRP); err != nil || fg != os.Getpid() {
			return fmt.Sprintf("terminal:true but the console is not its controlling terminal (TIOCGPGRP %d, %v)", fg, err)
		}
	case sid == os.Getpid():
		return "in a session of its own, the gofer's setting"
	}
	if listening, err := unix.GetsockoptInt(control.BootControlFD, unix.SOL_SOCKET, unix.SO_ACCEPTCONN); err != nil || listening != 1 {
		return fmt.Sprintf("fd %d is not a listening socket", control.BootControlFD)
	}
	if setup.Spec.Process.Terminal {
		for fd := 0; fd < 3; fd++ {
			if _, err := unix.IoctlGetTermios(fd, unix.TCGETS); err != nil {
				return fmt.Sprintf("terminal:true but fd %d is not a terminal", fd)
			}
		}
	}
	report := make([]byte, 512)
	n, err := unix.Read(control.BootGoferFD, report)
	if err != nil {
		return fmt.Sprintf("read the gofer's report on fd %d: %v", control.BootGoferFD, err)
	}
	if string(report[:n]) != "ok" {
		return "gofer: " + string(report[:n])
	}
	return ""
}
