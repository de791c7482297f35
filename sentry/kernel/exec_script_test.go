package kernel_test

import (
	"fmt"
	"slices"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/platform/fake"
	"github.com/moat-sandbox/moat/sentry/kernel/kerneltest"
	"github.com/moat-sandbox/moat/syscalls"
)

// What the expected values below are: each script was run the same way on
// the host (Linux 6.18) with an interpreter that printed its argv,
// getauxval(AT_EXECFN) and /proc/self/comm.

// Auxiliary vector keys (include/uapi/linux/auxvec.h).
const (
	auxBase   = 7
	auxEntry  = 9
	auxExecfn = 31
)

// atFDCWDArg is AT_FDCWD (-100) as a system call argument.
const atFDCWDArg = ^uintptr(99)

// execStartup is what a program found when it started.
type execStartup struct {
	argv        []string
	execfn      string
	comm        string
	base, entry uint64
}

func guestString(g *fake.Guest, addr uintptr) string {
	var s []byte
	var b [1]byte
	for ; len(s) < 4096; addr++ {
		g.Read(addr, b[:])
		if b[0] == 0 {
			break
		}
		s = append(s, b[0])
	}
	return string(s)
}

// readExecStartup reads argv and the auxiliary vector from the initial stack
// at %rsp, as a C runtime does, and the task's name.
func readExecStartup(g *fake.Guest) execStartup {
	var st execStartup
	sp := uintptr(g.Regs().Rsp)
	argc := g.ReadU64(sp)
	p := sp + 8
	for i := uint64(0); i < argc; i, p = i+1, p+8 {
		st.argv = append(st.argv, guestString(g, uintptr(g.ReadU64(p))))
	}
	for p += 8; g.ReadU64(p) != 0; p += 8 { // envp
	}
	for p += 8; g.ReadU64(p) != 0; p += 16 {
		switch v := g.ReadU64(p + 8); g.ReadU64(p) {
		case auxExecfn:
			st.execfn = guestString(g, uintptr(v))
		case auxBase:
			st.base = v
		case auxEntry:
			st.entry = v
		}
	}
	buf := g.Alloc(16)
	g.Call(unix.SYS_PRCTL, unix.PR_GET_NAME, buf)
	st.comm = guestString(g, buf)
	return st
}

// runExec runs main as init of a sandbox with /bin/interp, an
// interpreter that records its execStartup; main execs something. It returns
// the interpreter's execStartup, if it ran, and the errno main reported.
func runExec(t *testing.T, setup func(s *kerneltest.Sandbox), main func(g *fake.Guest) unix.Errno) (*execStartup, unix.Errno) {
	t.Helper()
	s := kerneltest.New(t, syscalls.NewTable())
	var ran *execStartup
	s.AddProgram("/bin/interp", func(g *fake.Guest) {
		st := readExecStartup(g)
		ran = &st
	})
	if setup != nil {
		setup(s)
	}
	var errno unix.Errno
	status := s.Run(func(g *fake.Guest) {
		errno = main(g)
		g.Call(unix.SYS_EXIT_GROUP, 99)
	})
	if ran == nil && status.Code != 99 {
		t.Errorf("init ended %+v; log:\n%s", status, s.Log())
	}
	return ran, errno
}

func execvePath(g *fake.Guest, name string, argv []string) unix.Errno {
	args := uintptr(0)
	if argv != nil {
		args = g.CStrings(argv)
	}
	_, errno := g.Call(unix.SYS_EXECVE, g.CString(name), args, g.CStrings(nil))
	return errno
}

func TestExecOfAScriptGivesItsInterpreterLinuxsArguments(t *testing.T) {
	for _, c := range []struct {
		name, script string
		argv         []string // nil: a NULL argv
		cwd          string
		want         []string
		errno        unix.Errno
	}{
		{"interpreter and argument", "#!/bin/interp -x\n", []string{"script", "a", "b"}, "", []string{"/bin/interp", "-x", "/tmp/script", "a", "b"}, 0},
		{"the argument is one word with its blanks", "#! /bin/interp  -x -y \n", []string{"script"}, "", []string{"/bin/interp", "-x -y", "/tmp/script"}, 0},
		{"argv[0] is dropped", "#!/bin/interp\n", []string{"ignored"}, "", []string{"/bin/interp", "/tmp/script"}, 0},
		{"a NULL argv", "#!/bin/interp\n", nil, "", []string{"/bin/interp", "/tmp/script"}, 0},
		{"an empty argument from a file ending in blanks", "#!/bin/interp   ", []string{"s"}, "", []string{"/bin/interp", "", "/tmp/script"}, 0},
		{"a relative interpreter is found from the working directory", "#!interp\n", []string{"s"}, "/bin", []string{"interp", "/tmp/script"}, 0},
		{"a relative interpreter not in the working directory", "#!interp\n", []string{"s"}, "/", nil, unix.ENOENT},
		{"no interpreter on the line", "#!  \n", []string{"s"}, "", nil, unix.ENOEXEC},
		{"an empty name, looked up as the working directory", "#!", []string{"s"}, "", nil, unix.EACCES},
		{"a missing interpreter", "#!/bin/none\n", []string{"s"}, "", nil, unix.ENOENT},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, errno := runExec(t, func(s *kerneltest.Sandbox) {
				s.WriteFile("/tmp/script", 0o755, []byte(c.script))
			}, func(g *fake.Guest) unix.Errno {
				if c.cwd != "" {
					if _, errno := g.Call(unix.SYS_CHDIR, g.CString(c.cwd)); errno != 0 {
						return errno
					}
				}
				return execvePath(g, "/tmp/script", c.argv)
			})
			if c.errno != 0 {
				if got != nil || errno != c.errno {
					t.Errorf("ran %+v, errno %v; want %v", got, errno, c.errno)
				}
				return
			}
			if got == nil {
				t.Fatalf("the interpreter did not run: execve gave %v", errno)
			}
			if !slices.Equal(got.argv, c.want) {
				t.Errorf("argv %q, want %q", got.argv, c.want)
			}
		})
	}
}

func TestExecOfAScriptTellsTheProgramTheScriptsName(t *testing.T) {
	// AT_EXECFN is the name execve was given and the task is named after
	// it (fs/exec.c: bprm->filename), though the interpreter runs.
	got, errno := runExec(t, func(s *kerneltest.Sandbox) {
		s.WriteFile("/tmp/myscript", 0o755, []byte("#!/bin/interp\n"))
	}, func(g *fake.Guest) unix.Errno { return execvePath(g, "/tmp/myscript", []string{"x"}) })
	if got == nil {
		t.Fatalf("execve: %v", errno)
	}
	if got.execfn != "/tmp/myscript" || got.comm != "myscript" {
		t.Errorf("AT_EXECFN %q, comm %q; want the script's", got.execfn, got.comm)
	}
}

// writeScriptChain writes /tmp/s1 (running inner) and /tmp/s2 ... /tmp/sN, each
// running the one before with an argument aK.
func writeScriptChain(s *kerneltest.Sandbox, n int, inner string) {
	s.WriteFile("/tmp/s1", 0o755, []byte(inner))
	for k := 2; k <= n; k++ {
		s.WriteFile(fmt.Sprintf("/tmp/s%d", k), 0o755, []byte(fmt.Sprintf("#!/tmp/s%d a%d\n", k-1, k)))
	}
}

func TestExecFollowsFiveScriptsAndNoMore(t *testing.T) {
	got, errno := runExec(t, func(s *kerneltest.Sandbox) { writeScriptChain(s, 5, "#!/bin/interp a1\n") },
		func(g *fake.Guest) unix.Errno { return execvePath(g, "/tmp/s5", []string{"s5", "n"}) })
	want := []string{"/bin/interp", "a1", "/tmp/s1", "a2", "/tmp/s2", "a3", "/tmp/s3", "a4", "/tmp/s4", "a5", "/tmp/s5", "n"}
	if got == nil || !slices.Equal(got.argv, want) || got.execfn != "/tmp/s5" || got.comm != "s5" {
		t.Errorf("five scripts: ran %+v (errno %v), want argv %q", got, errno, want)
	}
	// The sixth: Linux opens its interpreter, then gives up (ELOOP), so a
	// fault on the way comes first.
	for inner, want := range map[string]unix.Errno{
		"#!/bin/interp a1\n": unix.ELOOP,
		"#!/bin/none\n":      unix.ENOENT,
		"#!\n":               unix.ENOEXEC,
	} {
		got, errno := runExec(t, func(s *kerneltest.Sandbox) { writeScriptChain(s, 6, inner) },
			func(g *fake.Guest) unix.Errno { return execvePath(g, "/tmp/s6", []string{"s6"}) })
		if got != nil || errno != want {
			t.Errorf("six scripts, the first %q: ran %+v, errno %v; want %v", inner, got, errno, want)
		}
	}
}

func TestExecOfAScriptThroughACloseOnExecFD(t *testing.T) {
	// Its /dev/fd name is gone once the interpreter runs: ENOENT, but
	// only for a line that names an interpreter. Without close-on-exec
	// the interpreter is given the /dev/fd name.
	for _, c := range []struct {
		name, script string
		flags        int
		errno        unix.Errno
	}{
		{"close-on-exec", "#!/bin/interp\n", unix.O_CLOEXEC, unix.ENOENT},
		{"close-on-exec, an empty line", "#!\n", unix.O_CLOEXEC, unix.ENOEXEC},
		{"close-on-exec, a missing interpreter", "#!/bin/none\n", unix.O_CLOEXEC, unix.ENOENT},
		{"kept open", "#!/bin/interp\n", 0, 0},
	} {
		var fd uintptr
		got, errno := runExec(t, func(s *kerneltest.Sandbox) {
			s.WriteFile("/tmp/script", 0o755, []byte(c.script))
		}, func(g *fake.Guest) unix.Errno {
			var errno unix.Errno
			if fd, errno = g.Call(unix.SYS_OPENAT, atFDCWDArg, g.CString("/tmp/script"), uintptr(unix.O_RDONLY|c.flags)); errno != 0 {
				return errno
			}
			_, errno = g.Call(unix.SYS_EXECVEAT, fd, g.CString(""), g.CStrings([]string{"x"}), g.CStrings(nil), unix.AT_EMPTY_PATH)
			return errno
		})
		devfd := fmt.Sprintf("/dev/fd/%d", fd)
		switch {
		case c.errno != 0 && (got != nil || errno != c.errno):
			t.Errorf("%s: ran %+v, errno %v; want %v", c.name, got, errno, c.errno)
		case c.errno == 0 && (got == nil || !slices.Equal(got.argv, []string{"/bin/interp", devfd}) || got.execfn != devfd):
			t.Errorf("%s: ran %+v, errno %v; want argv [/bin/interp %s] and AT_EXECFN %s", c.name, got, errno, devfd, devfd)
		}
	}
}

// elfWithInterp returns prog, a kerneltest ELF, with a PT_INTERP naming
// interp appended to its program headers.
func elfWithInterp(prog []byte, interp string) []byte {
	const ehdrSize, phdrSize = 64, 56
	b := append([]byte(nil), prog...)
	phnum := int(b[56]) | int(b[57])<<8
	if len(b) != ehdrSize+phnum*phdrSize {
		panic("kerneltest.ELF changed its layout")
	}
	b[56]++
	name := append([]byte(interp), 0)
	ph := make([]byte, phdrSize)
	put := func(off int, v uint64, n int) {
		for i := 0; i < n; i++ {
			ph[off+i] = byte(v >> (8 * i))
		}
	}
	put(0, unix.PT_INTERP, 4)
	put(4, unix.PF_R, 4)
	put(8, uint64(len(b)+phdrSize), 8)
	put(32, uint64(len(name)), 8)
	put(40, uint64(len(name)), 8)
	put(48, 1, 8)
	return append(append(b, ph...), name...)
}

func TestExecFindsARelativeELFInterpreterFromTheWorkingDirectory(t *testing.T) {
	// Linux opens PT_INTERP's name as it is, relative to the working
	// directory (host-checked); here the interpreter is an ET_EXEC one,
	// which runs at its own addresses with AT_BASE 0.
	for cwd, want := range map[string]unix.Errno{"/bin": 0, "/": unix.ENOENT} {
		var mainEntry uint64
		got, errno := runExec(t, func(s *kerneltest.Sandbox) {
			mainEntry = s.Platform.Program(func(g *fake.Guest) { t.Errorf("the program ran, not its interpreter") })
			s.WriteFile("/tmp/dyn", 0o755, elfWithInterp(kerneltest.ELF(mainEntry), "interp"))
		}, func(g *fake.Guest) unix.Errno {
			if _, errno := g.Call(unix.SYS_CHDIR, g.CString(cwd)); errno != 0 {
				return errno
			}
			return execvePath(g, "/tmp/dyn", []string{"dyn"})
		})
		switch {
		case want != 0 && (got != nil || errno != want):
			t.Errorf("from %s: ran %+v, errno %v; want %v", cwd, got, errno, want)
		case want == 0 && (got == nil || got.base != 0 || got.entry != mainEntry || got.execfn != "/tmp/dyn"):
			t.Errorf("from %s: ran %+v (errno %v); want AT_BASE 0, AT_ENTRY %#x", cwd, got, errno, mainEntry)
		}
	}
}

func TestAProgramsNameIsCutToFifteenBytes(t *testing.T) {
	// TASK_COMM_LEN is 16 with the NUL, for init as for an exec.
	const long = "/bin/a-very-long-program-name"
	name := func(g *fake.Guest) string {
		buf := g.Alloc(32)
		g.Write(buf, []byte("################################"))
		g.Call(unix.SYS_PRCTL, unix.PR_GET_NAME, buf)
		b := make([]byte, 17)
		g.Read(buf, b)
		return string(b)
	}
	want := "a-very-long-pro\x00#"
	s := kerneltest.New(t, syscalls.NewTable())
	var initName, execName string
	s.AddProgram(long, func(g *fake.Guest) {
		if initName == "" {
			initName = name(g)
			execvePath(g, long, []string{"again"})
			return
		}
		execName = name(g)
	})
	s.Start(func(g *fake.Guest) {}, kerneltest.Init{Argv: []string{long}})
	s.Wait()
	if initName != want || execName != want {
		t.Errorf("init's name %q, an exec's %q; want %q", initName, execName, want)
	}
}
