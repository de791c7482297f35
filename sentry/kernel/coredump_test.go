package kernel_test

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/internal/linuxabi"
	"github.com/moat-sandbox/moat/platform/fake"
	"github.com/moat-sandbox/moat/sentry/kernel"
	"github.com/moat-sandbox/moat/sentry/kernel/kerneltest"
	"github.com/moat-sandbox/moat/sentry/vfs"
)

// When a signal dumps core: the file, what it holds, and what wait says.

const coreMarker = "moat core marker"

// dieBy is a child that chdirs to /tmp, sets RLIMIT_CORE, marks its
// memory and sends itself sig.
func dieBy(limit uint64, dumpable bool, sig unix.Signal) fake.Program {
	return func(g *fake.Guest) {
		g.Call(unix.SYS_CHDIR, g.CString("/tmp"))
		rl := g.Alloc(16)
		g.WriteU64(rl, limit)
		g.WriteU64(rl+8, kernel.Infinity)
		g.Call(unix.SYS_SETRLIMIT, unix.RLIMIT_CORE, rl)
		if !dumpable {
			g.Call(unix.SYS_PRCTL, unix.PR_SET_DUMPABLE, 0)
		}
		g.CString(coreMarker)
		g.Call(unix.SYS_KILL, uintptr(getpid(g)), uintptr(sig))
	}
}

// reap waits for pid and returns wait4's status and waitid's si_code.
func reap(t *testing.T, g *fake.Guest, pid int) (unix.WaitStatus, int32) {
	t.Helper()
	info := g.Alloc(128)
	if _, errno := g.Call(unix.SYS_WAITID, unix.P_PID, uintptr(pid), info, unix.WEXITED|unix.WNOWAIT, 0); errno != 0 {
		t.Errorf("waitid: %v", errno)
	}
	code := int32(g.ReadU32(info + 8))
	_, status, errno := g.Wait(pid, 0)
	if errno != 0 {
		t.Errorf("wait4: %v", errno)
	}
	return status, code
}

func statOf(t *testing.T, s *kerneltest.Sandbox, name string) vfs.Stat {
	t.Helper()
	st, err := s.Lookup(name).Dentry.Inode().Stat()
	if err != nil {
		t.Errorf("stat %s: %v", name, err)
	}
	return st
}

func TestASignalThatDumpsCoreWritesAnELFCoreAndWaitSaysCoreDumped(t *testing.T) {
	s := newSandbox(t)
	var child int
	runInit(t, s, func(g *fake.Guest) {
		child = fork(t, g, dieBy(kernel.Infinity, true, unix.SIGQUIT))
		status, code := reap(t, g, child)
		if !status.Signaled() || status.Signal() != unix.SIGQUIT || !status.CoreDump() || code != linuxabi.CLD_DUMPED {
			t.Errorf("status %#x, si_code %d; want killed by SIGQUIT, core dumped, CLD_DUMPED", uint32(status), code)
		}
	})
	core := s.ReadFile("/tmp/core")
	f, err := elf.NewFile(bytes.NewReader(core))
	if err != nil {
		t.Fatalf("the core is no ELF file: %v", err)
	}
	if f.Type != elf.ET_CORE || f.Machine != elf.EM_X86_64 || f.Class != elf.ELFCLASS64 {
		t.Errorf("ELF type %v, machine %v, class %v; want an x86-64 core", f.Type, f.Machine, f.Class)
	}
	var notes, marked bool
	for _, p := range f.Progs {
		data := make([]byte, p.Filesz)
		p.ReadAt(data, 0)
		switch p.Type {
		case elf.PT_LOAD:
			marked = marked || bytes.Contains(data, []byte(coreMarker))
		case elf.PT_NOTE:
			notes = true
			checkPrstatus(t, data, unix.SIGQUIT, child)
		}
	}
	if !notes || !marked {
		t.Errorf("notes %v, the memory's marker %v; want both", notes, marked)
	}
	if st := statOf(t, s, "/tmp/core"); st.Mode&0o7777 != 0o600&^0o022 || st.UID != 0 {
		t.Errorf("core mode %#o, owner %d; want 0600 less the umask, the dumper's", st.Mode&0o7777, st.UID)
	}
}

// checkPrstatus finds the first NT_PRSTATUS note and checks its signal
// and thread id.
func checkPrstatus(t *testing.T, notes []byte, sig unix.Signal, tid int) {
	le := binary.LittleEndian
	for len(notes) >= 12 {
		namesz, descsz, typ := le.Uint32(notes), le.Uint32(notes[4:]), le.Uint32(notes[8:])
		desc := notes[12+(namesz+3)&^3:]
		if typ == unix.NT_PRSTATUS {
			if descsz != 336 || int16(le.Uint16(desc[12:])) != int16(sig) || int32(le.Uint32(desc[32:])) != int32(tid) {
				t.Errorf("NT_PRSTATUS: size %d, pr_cursig %d, pr_pid %d; want 336, %d, %d",
					descsz, int16(le.Uint16(desc[12:])), int32(le.Uint32(desc[32:])), sig, tid)
			}
			return
		}
		notes = desc[(descsz+3)&^3:]
	}
	t.Errorf("no NT_PRSTATUS note")
}

func TestNoCoreWithoutRLimitCoreOfAPageForAnUndumpableProcessOrForSIGKILL(t *testing.T) {
	for _, c := range []struct {
		what     string
		limit    uint64
		dumpable bool
		sig      unix.Signal
	}{
		{"RLIMIT_CORE 0", 0, true, unix.SIGSEGV},
		{"RLIMIT_CORE under a page", 4095, true, unix.SIGABRT},
		{"PR_SET_DUMPABLE 0", kernel.Infinity, false, unix.SIGQUIT},
		{"SIGKILL", kernel.Infinity, true, unix.SIGKILL},
		{"SIGTERM", kernel.Infinity, true, unix.SIGTERM},
	} {
		s := newSandbox(t)
		runInit(t, s, func(g *fake.Guest) {
			child := fork(t, g, dieBy(c.limit, c.dumpable, c.sig))
			status, code := reap(t, g, child)
			if !status.Signaled() || status.Signal() != c.sig || status.CoreDump() || code != linuxabi.CLD_KILLED {
				t.Errorf("%s: status %#x, si_code %d; want killed by %v, no core, CLD_KILLED", c.what, uint32(status), code, c.sig)
			}
			if _, errno := g.Call(unix.SYS_ACCESS, g.CString("/tmp/core"), unix.F_OK); errno != unix.ENOENT {
				t.Errorf("%s: access(/tmp/core) = %v, want ENOENT: no core file", c.what, errno)
			}
		})
	}
}

func TestACoreCutShortByRLimitCoreWritesNoMoreThanTheLimit(t *testing.T) {
	s := newSandbox(t)
	runInit(t, s, func(g *fake.Guest) {
		child := fork(t, g, func(g *fake.Guest) {
			big := g.Alloc(1 << 20)
			for off := uintptr(0); off < 1<<20; off += 4096 {
				g.WriteU32(big+off, 1)
			}
			dieBy(16384, true, unix.SIGSEGV)(g)
		})
		if status, _ := reap(t, g, child); !status.CoreDump() {
			t.Errorf("status %#x: a dump cut short still counts as dumped on Linux 6.x", uint32(status))
		}
	})
	if st := statOf(t, s, "/tmp/core"); st.Blocks*512 > 16384+4096 {
		t.Errorf("the cut core uses %d bytes, beyond RLIMIT_CORE's 16384", st.Blocks*512)
	}
}
