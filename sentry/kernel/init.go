package kernel

import (
	"errors"
	"fmt"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/internal/seccomp"
	"github.com/moat-sandbox/moat/sentry/vfs"
)

// InitSpec describes a process made from outside the sandbox: its first
// (init), or one that `moat exec` starts (StartProcess).
type InitSpec struct {
	Argv   []string
	Env    []string
	Cwd    string
	UID    uint32
	GID    uint32
	Groups []uint32
	Umask  uint32
	// Limits replace the defaults where set.
	Limits map[int]Limit
	// Stdio are the files for fds 0, 1 and 2.
	Stdio [3]*vfs.File
	// ExtraFiles are the files for fds 3 onwards (runc's --preserve-fds,
	// LISTEN_FDS socket activation); nil entries stay closed.
	ExtraFiles []*vfs.File
	// Capability sets (bit masks) the process starts with, and whether it
	// may gain privileges (no_new_privs).
	CapEffective, CapPermitted, CapInheritable, CapBounding uint64
	// CapAmbient is kept within CapPermitted and CapInheritable, as
	// prctl(PR_CAP_AMBIENT_RAISE) keeps it.
	CapAmbient uint64
	NoNewPrivs bool
	// Seccomp, if set, is the filter the process starts under
	// (linux.seccomp), checked by seccomp.Check.
	Seccomp []seccomp.Insn
	// Console, if set, is the controlling terminal of init's session
	// (the container's terminal), with init's group in the foreground.
	Console *TTY
	// OOMScoreAdj, if set, is the process's oom_score_adj, written as
	// runc writes it (with CAP_SYS_RESOURCE: the floor moves with it).
	OOMScoreAdj *int
	// PlainSignals, for init alone, drops init's immunity to the signals
	// it has no handler for (Linux's SIGNAL_UNKILLABLE): it takes them as
	// any process does. `moat sandbox` sets it: its command is pid 1 only
	// because the sandbox has pids of its own, and must end on the
	// caller's Ctrl-C or SIGTERM as it would on the host.
	PlainSignals bool
	// Root, if set, is the process's root and mount tree instead of the
	// kernel's: a container of a pod that is not the pod's sandbox has a
	// tree of its own (CreateProcess).
	Root vfs.Path
	// Container names the container of a pod the process belongs to, ""
	// for the sandbox's own; the processes it makes belong to it too
	// (SignalContainer, ThreadGroup.Container).
	Container string
	// PIDNamespace, if set, is the pid namespace CreateProcess makes the
	// process in, one nested in the sandbox's (NewPIDNamespace): a pod's
	// container with a pid namespace of its own. The first process made
	// in it is its init, pid 1 there; a later one (`moat exec`) joins it
	// with its parent outside, as a process runc's exec forks after setns.
	PIDNamespace *PIDNamespace
}

// InitError is a problem with the init process's configuration, worded for
// the person who wrote it.
type InitError struct {
	Msg string
	// Unrunnable, when set, says that the program itself could not be
	// run, and why: ENOENT when it was not found, EACCES or ENOEXEC when
	// it is not something that executes. A caller that reports it as a
	// shell does (127, 126: `moat sandbox`) looks here.
	Unrunnable unix.Errno
}

func (e *InitError) Error() string { return e.Msg }

// CreateInit builds pid 1 from s, ready for Start.
func (k *Kernel) CreateInit(s InitSpec) error {
	tg, t, err := k.buildProcess(s)
	if err != nil {
		return err
	}
	k.treeMu.Lock()
	tg.pid, t.tid = 1, 1
	tg.pgid, tg.sid = 1, 1
	k.registerLocked(tg, s.Console)
	k.nextTID = 2
	k.init, k.rootPIDNS.init = tg, tg
	k.initPlainSignals = s.PlainSignals
	k.treeMu.Unlock()
	return nil
}

// buildProcess makes the process s describes, with one task, loaded and
// ready to run but not yet in the process tree and with no pid: init's
// and those `moat exec` starts are made the same way.
func (k *Kernel) buildProcess(s InitSpec) (*ThreadGroup, *Task, error) {
	if len(s.Argv) == 0 {
		return nil, nil, &InitError{Msg: "process.args is empty"}
	}
	root := k.Root
	if s.Root.Mount != nil {
		root = s.Root
	}
	cwd, err := vfs.Resolver{Root: root, Start: root, Creds: vfs.KernelCreds}.Lookup(s.Cwd, true)
	if err == nil && !cwd.Dentry.IsDir() {
		err = unix.ENOTDIR
	}
	if err != nil {
		return nil, nil, &InitError{Msg: fmt.Sprintf("chdir to cwd (%q) set in config.json failed: %v", s.Cwd, err)}
	}
	fs := NewFSContext(root, cwd, s.Umask)
	creds := NewCredentials(s.UID, s.GID, s.Groups)
	creds.CapEffective, creds.CapPermitted, creds.CapInheritable = s.CapEffective, s.CapPermitted, s.CapInheritable
	creds.CapBounding = s.CapBounding
	creds.CapAmbient = s.CapAmbient & s.CapPermitted & s.CapInheritable
	// The program is found and opened as the user that runs it.
	res := vfs.Resolver{Root: root, Start: cwd,
		Creds: vfs.Creds{FSUID: s.UID, FSGID: s.GID, Groups: s.Groups, Caps: creds.CapEffective}}

	name, err := k.findExecutable(res, s.Argv[0], s.Env)
	if err != nil {
		return nil, nil, err
	}
	// The runtime execs the container's program with these credentials,
	// so Linux's rules for execve make the ones it runs with.
	img, err := k.loadProgram(ExecTarget{Res: res, Name: name, Cwd: res}, creds, execUnsafe{NoNewPrivs: s.NoNewPrivs}, s.Argv, s.Env)
	if err != nil {
		return nil, nil, &InitError{Msg: fmt.Sprintf("exec %q: %v", s.Argv[0], err), Unrunnable: unrunnable(err)}
	}
	ctx, err := k.attachFresh(img.mm)
	if err != nil {
		img.mm.Release()
		return nil, nil, fmt.Errorf("new process: %w", err)
	}

	tg := newThreadGroup(k, 0, &SigHand{})
	tg.container = s.Container
	if s.Console != nil {
		s.Console.k.Store(k)
		tg.tty = s.Console
	}
	limits := DefaultLimits()
	for r, l := range s.Limits {
		if r >= 0 && r < NumLimits {
			limits[r] = l
		}
	}
	tg.limits.setAll(limits)
	if a := s.OOMScoreAdj; a != nil {
		if *a < OOMScoreAdjMin || *a > OOMScoreAdjMax {
			return nil, nil, &InitError{Msg: fmt.Sprintf("process.oomScoreAdj %d is outside [%d, %d]", *a, OOMScoreAdjMin, OOMScoreAdjMax)}
		}
		tg.SetOOMScoreAdj(*a, false, true)
	}
	t := newTask(k, tg)
	t.regs, t.ctx, t.mm, t.exe, t.comm = img.regs, ctx, img.mm, img.exe, img.comm
	t.fds, t.fs, t.creds = NewFDTable(), fs, img.creds
	t.prctl.NoNewPrivs = s.NoNewPrivs
	if s.Seccomp != nil {
		chain, ok := (*seccomp.Chain)(nil).Push(s.Seccomp)
		if !ok {
			return nil, nil, &InitError{Msg: "linux.seccomp: the filter is longer than a chain may be"}
		}
		t.sc.chain.Store(chain)
		t.sc.mode.Store(unix.SECCOMP_MODE_FILTER)
	}
	t.mm.SetLimitAS(tg.limitAS)
	t.mm.SetLimitStack(tg.limitStack)
	// The table takes references of its own: the spec's go, so that a
	// file (a host pipe's write end) is released when the process's last
	// fd for it closes, and its reader sees the end.
	for fd, f := range s.Stdio {
		if f != nil {
			t.fds.InstallAt(int32(fd), f, false, limits[unix.RLIMIT_NOFILE].Cur)
			f.DecRef()
		}
	}
	for fd, f := range s.ExtraFiles {
		if f != nil {
			t.fds.InstallAt(int32(3+fd), f, false, limits[unix.RLIMIT_NOFILE].Cur)
			f.DecRef()
		}
	}
	tg.tasks = []*Task{t}
	return tg, t, nil
}

// registerLocked enters tg, whose pid and task's tid are set, into the
// process tree (treeMu held) as the leader of its own session and process
// group, with console as its controlling terminal when there is one.
func (k *Kernel) registerLocked(tg *ThreadGroup, console *TTY) {
	t := tg.tasks[0]
	tg.vpid, t.vtid = tg.pid, t.tid
	tg.pgid, tg.sid = tg.pid, tg.pid
	if console != nil {
		console.sid, console.fg = tg.pid, tg.pid
	}
	k.tasks[t.tid] = t
	t.nprocUID = t.creds.UID
	k.countTaskLocked(t, 1)
	k.tgs[tg.pid] = tg
}

// findExecutable applies execvp's rule, as runc does for process.args[0]:
// a name with a slash is a path, others are searched in the environment's
// PATH.
func (k *Kernel) findExecutable(res vfs.Resolver, arg0 string, env []string) (string, error) {
	if strings.Contains(arg0, "/") {
		if _, err := k.openExecCheck(res, arg0); err != nil {
			return "", &InitError{Msg: fmt.Sprintf("exec: %q: %v", arg0, err), Unrunnable: unrunnable(err)}
		}
		return arg0, nil
	}
	pathEnv := ""
	for _, e := range env {
		if v, ok := strings.CutPrefix(e, "PATH="); ok {
			pathEnv = v
		}
	}
	for _, dir := range strings.Split(pathEnv, ":") {
		if dir == "" {
			dir = "."
		}
		cand := dir + "/" + arg0
		if _, err := k.openExecCheck(res, cand); err == nil {
			return cand, nil
		}
	}
	return "", &InitError{Msg: fmt.Sprintf("exec: %q: executable file not found in $PATH", arg0), Unrunnable: unix.ENOENT}
}

// unrunnable is the errno of a failed exec, when the failure is the
// program's (not found, not executable) rather than the sandbox's: a
// memory or I/O error is not the command's fault, and gets no shell
// status.
func unrunnable(err error) unix.Errno {
	var errno unix.Errno
	if !errors.As(err, &errno) {
		return 0
	}
	switch errno {
	case unix.ENOENT, unix.ENOTDIR, unix.ELOOP, unix.ENAMETOOLONG, unix.EACCES, unix.EPERM, unix.ENOEXEC, unix.ETXTBSY, unix.EISDIR:
		return errno
	}
	return 0
}

// openExecCheck reports whether name could be executed.
func (k *Kernel) openExecCheck(res vfs.Resolver, name string) (vfs.Path, error) {
	f, err := k.openExec(res, name)
	if err != nil {
		return vfs.Path{}, err
	}
	f.close()
	return f.path, nil
}
