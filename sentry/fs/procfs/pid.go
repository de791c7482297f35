package procfs

import (
	"strconv"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/sentry/kernel"
	"github.com/moat-sandbox/moat/sentry/vfs"
)

// pidDir is /proc/<pid> (name is how it was reached: the pid, or a tid).
// Every file reads the process's leader at the time it is read, and gives
// ESRCH once the process is gone.
func (f *fs) pidDir(tg *kernel.ThreadGroup, name string) *node {
	p := name + "/"
	leader := func() (*kernel.Task, error) {
		if t := tg.Leader(); t != nil {
			return t, nil
		}
		return nil, unix.ESRCH
	}
	children := f.taskFiles(p, leader, false)
	children = append(children, child{"task", f.owned(f.dir(p+"task", true, func() []child {
		var out []child
		for _, t := range tg.Tasks() {
			tid := strconv.Itoa(int(f.k.IDIn(f.ns, t.RootTID())))
			out = append(out, child{tid, f.taskDir(t, p+"task/"+tid)})
		}
		return out
	}), leader)})
	n := f.owned(f.dir(p[:len(p)-1], false, func() []child { return children }), leader)
	n.process = tg
	return n
}

// ProcessOf is the process whose /proc/<pid> directory f is open on, if f
// is one: Linux's pidfd_send_signal takes such a descriptor for a pidfd of
// that process (tgid_pidfd_to_pid), the interface that preceded
// pidfd_open. /proc/<pid>/task/<tid> is no such directory.
func ProcessOf(f *vfs.File) (*kernel.ThreadGroup, bool) {
	s, ok := f.Impl().(*snapshot)
	if !ok || s.node.process == nil {
		return nil, false
	}
	return s.node.process, true
}

// taskDir is /proc/<pid>/task/<tid>: the files of one thread.
func (f *fs) taskDir(t *kernel.Task, path string) *node {
	get := func() (*kernel.Task, error) {
		if f.k.TaskByTID(t.RootTID()) != t {
			return nil, unix.ESRCH
		}
		return t, nil
	}
	children := f.taskFiles(path+"/", get, true)
	return f.owned(f.dir(path, false, func() []child { return children }), get)
}

// owned makes n belong to the effective ids of the task get returns, as
// Linux's /proc/<pid> files do (root's once the task is gone).
func (f *fs) owned(n *node, get func() (*kernel.Task, error)) *node {
	n.owner = func() (uint32, uint32) {
		t, err := get()
		if err != nil {
			return 0, 0
		}
		c := t.Creds()
		c.Lock()
		defer c.Unlock()
		return c.EUID, c.EGID
	}
	return n
}

// taskFiles are the files of /proc/<pid> and of /proc/<pid>/task/<tid>
// under prefix p, about the task get returns: the process as a whole
// (thread false: its leader, the group's times) or the one thread. ns/
// has the namespaces a process may have of its own (ns.go).
func (f *fs) taskFiles(p string, get func() (*kernel.Task, error), thread bool) []child {
	gen := func(file string, fn func(t *kernel.Task) ([]byte, error)) child {
		n := f.file(p+file, func() ([]byte, error) {
			t, err := get()
			if err != nil {
				return nil, err
			}
			return fn(t)
		})
		n.noWrite = unix.EINVAL
		return child{file, f.owned(n, get)}
	}
	rw := func(file string, max int, read func(t *kernel.Task) ([]byte, error), write func(t, w *kernel.Task, data []byte) error) child {
		c := gen(file, read)
		c.node.writable(max, func(w *kernel.Task, data []byte) error {
			t, err := get()
			if err != nil {
				return err
			}
			return write(t, w, data)
		})
		return c
	}
	lnk := func(file string, fn func(t *kernel.Task) (string, error)) child {
		return child{file, f.owned(f.link(p+file, func(vfs.Caller) (string, error) {
			t, err := get()
			if err != nil {
				return "", err
			}
			return fn(t)
		}), get)}
	}
	memory := func(start, end func(t *kernel.Task) uintptr) func(t *kernel.Task) ([]byte, error) {
		return func(t *kernel.Task) ([]byte, error) { return guestBytes(t, start(t), end(t)) }
	}
	// guarded makes c a file of the task's memory that only its owner
	// reads (mode 0400) and that opens for a task that may read the
	// task's memory (Linux's mm_access with PTRACE_MODE_READ_FSCREDS:
	// the ids, YAMA none, Landlock's domains), else EACCES.
	guarded := func(c child) child {
		n := c.node
		n.mode = unix.S_IFREG | 0o400
		n.openAs = func(ctx vfs.Context, flags int) (vfs.FileImpl, error) {
			t, err := get()
			if err != nil {
				return nil, err
			}
			opener, ok := ctx.(*kernel.Task)
			if !ok || opener.MM() != t.MM() && !opener.MayPtrace(t, kernel.PtraceReadFSCreds) {
				return nil, unix.EACCES
			}
			return n.Open(flags)
		}
		return c
	}
	cs := []child{
		gen("status", func(t *kernel.Task) ([]byte, error) { return f.status(t, thread) }),
		gen("stat", func(t *kernel.Task) ([]byte, error) { return f.statLine(t, thread) }),
		gen("statm", statm),
		rw("comm", commMax, comm, writeComm),
		gen("cmdline", memory(func(t *kernel.Task) uintptr { return t.MM().Layout.ArgStart },
			func(t *kernel.Task) uintptr { return t.MM().Layout.ArgEnd })),
		guarded(gen("environ", memory(func(t *kernel.Task) uintptr { return t.MM().Layout.EnvStart },
			func(t *kernel.Task) uintptr { return t.MM().Layout.EnvEnd }))),
		guarded(gen("auxv", memory(func(t *kernel.Task) uintptr { return t.MM().Layout.AuxvStart },
			func(t *kernel.Task) uintptr { return t.MM().Layout.AuxvEnd }))),
		gen("maps", maps), gen("smaps", smaps), gen("smaps_rollup", smapsRollup),
		{"mem", f.memNode(p+"mem", get)},
		gen("mounts", mounts), gen("mountinfo", mountinfo), gen("limits", limits),
		gen("cgroup", func(*kernel.Task) ([]byte, error) { return []byte(cgroupLine), nil }),
		rw("oom_score_adj", numberMax, oomScoreAdj, writeOOMScoreAdj),
		rw("oom_adj", numberMax, oomAdj, writeOOMAdj),
		gen("oom_score", oomScore),
		lnk("exe", func(t *kernel.Task) (string, error) { return pathName(t, t.Executable()), nil }),
		lnk("cwd", func(t *kernel.Task) (string, error) {
			_, cwd := t.FS().Get()
			return pathName(t, cwd), nil
		}),
		lnk("root", func(t *kernel.Task) (string, error) {
			root, _ := t.FS().Get()
			return pathName(t, root), nil
		}),
		{"fd", f.owned(f.fdDir(p+"fd", get), get)},
		{"fdinfo", f.owned(f.fdInfoDir(p+"fdinfo", get), get)},
		{"map_files", f.owned(f.mapFilesDir(p+"map_files", get), get)},
		{"ns", f.owned(f.nsDir(p+"ns", get), get)},
	}
	return append(cs, f.userNSFiles(p, get)...)
}

// cgroupLine is /proc/<pid>/cgroup: the sandbox is one cgroup v2 group,
// its own root, as a container with a cgroup namespace sees itself.
const cgroupLine = "0::/\n"

// pathName is p as the task sees it, " (deleted)" once its name is gone.
func pathName(t *kernel.Task, p vfs.Path) string {
	root, _ := t.FS().Get()
	return vfs.ShownName(p, root)
}

// guestBytes reads [start, end) of the task's memory.
func guestBytes(t *kernel.Task, start, end uintptr) ([]byte, error) {
	if end <= start {
		return nil, nil
	}
	b := make([]byte, min(end-start, 1<<20))
	n, _ := t.MM().CopyIn(start, b)
	return b[:n], nil
}
