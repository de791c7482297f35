package systrap

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/platform"
	"github.com/moat-sandbox/moat/sentry/arch"
)

// testHostFiles places host files at memory-file offsets hostBase,
// hostBase+1 MiB, ..., each 1 MiB long at most.
type testHostFiles []int

const hostBase = 1 << 40

func (h testHostFiles) HostFileAt(off, length uint64) (int, uint64, bool) {
	if off < hostBase {
		return 0, 0, false
	}
	i := (off - hostBase) >> 20
	if i >= uint64(len(h)) || (off-hostBase)&(1<<20-1)+length > 1<<20 {
		return -1, 0, true
	}
	return h[i], (off - hostBase) & (1<<20 - 1), true
}

// hostFile writes data into a new file and opens it read-only.
func hostFile(t *testing.T, data []byte) int {
	t.Helper()
	path := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(fd) })
	var st unix.Statfs_t
	if unix.Fstatfs(fd, &st) == nil && st.Flags&unix.ST_NOEXEC != 0 {
		t.Skip("the temporary directory is on a noexec mount")
	}
	return fd
}

// TestHostFileMappings: code and data mapped from host files (two, sent to
// the stub in one message) run in the guest, in two address spaces each
// receiving its own descriptors; a writable mapping of one is refused.
func TestHostFileMappings(t *testing.T) {
	m := newTestMemory(t)
	p := getPlatform(t, m)
	// mov 0x500000,%eax; mov %eax,%edi; mov $60,%eax; syscall
	code := []byte{0x8b, 0x04, 0x25, 0, 0, 0x50, 0, 0x89, 0xc7, 0xb8, 60, 0, 0, 0, 0x0f, 0x05}
	codeFD, dataFD := hostFile(t, code), hostFile(t, []byte{0x2a, 0, 0, 0})
	p.MapHostFiles(testHostFiles{codeFD, dataFD})
	for range 2 {
		as, err := p.NewAddressSpace()
		if err != nil {
			t.Fatal(err)
		}
		if err := as.MapFile(codeAddr, hostBase, 4096, platform.ProtRead|platform.ProtExec); err != nil {
			t.Fatal(err)
		}
		if err := as.MapFile(dataAddr, hostBase+1<<20, 4096, platform.ProtRead); err != nil {
			t.Fatal(err)
		}
		if err := as.MapFile(stackAddr, hostBase+1<<20, 4096, platform.ProtRead|platform.ProtWrite); err != unix.EINVAL {
			t.Errorf("a writable mapping of a host file: %v, want EINVAL", err)
		}
		if err := as.MapFile(stackAddr, hostBase+3<<20, 4096, platform.ProtRead); err != unix.EINVAL {
			t.Errorf("a mapping of no host file: %v, want EINVAL", err)
		}
		ctx, err := as.NewContext()
		if err != nil {
			t.Fatal(err)
		}
		regs := arch.Registers{Rip: codeAddr, Eflags: arch.InitialEflags}
		ev, err := ctx.Switch(&regs)
		if err != nil || ev.Kind != platform.EventSyscall || regs.OrigRax != 60 || regs.Rdi != 0x2a {
			t.Fatalf("event %+v nr %d rdi %#x err %v: want exit(0x2a) from the host files' code and data",
				ev, regs.OrigRax, regs.Rdi, err)
		}
		a := as.(*addressSpace)
		if len(a.fds.num) != 2 || len(a.unsent) != 0 {
			t.Errorf("the stub holds %v, unsent %v: want both files, sent", a.fds.num, a.unsent)
		}
		ctx.Release()
		as.Release()
	}
	// The source stub got them in the background: a stub cloned now starts
	// with both, and maps them without a descriptor sent.
	deadline := time.Now().Add(5 * time.Second)
	for {
		p.srcMu.Lock()
		n := len(p.srcFDs.num)
		p.srcMu.Unlock()
		if n == 2 || time.Now().After(deadline) {
			break
		}
		time.Sleep(time.Millisecond)
	}
	as, err := p.newAddressSpace(urgent)
	if err != nil {
		t.Fatal(err)
	}
	defer as.Release()
	if len(as.fds.num) != 2 {
		t.Fatalf("a stub cloned from the source holds %v, want both files", as.fds.num)
	}
	if err := as.MapFile(codeAddr, hostBase, 4096, platform.ProtRead|platform.ProtExec); err != nil || len(as.unsent) != 0 {
		t.Fatalf("MapFile: %v, unsent %v", err, as.unsent)
	}
	if err := as.MapFile(dataAddr, hostBase+1<<20, 4096, platform.ProtRead); err != nil {
		t.Fatal(err)
	}
	ctx, err := as.NewContext()
	if err != nil {
		t.Fatal(err)
	}
	defer ctx.Release()
	regs := arch.Registers{Rip: codeAddr, Eflags: arch.InitialEflags}
	if ev, err := ctx.Switch(&regs); err != nil || regs.OrigRax != 60 || regs.Rdi != 0x2a {
		t.Fatalf("event %+v nr %d rdi %#x err %v: want exit(0x2a) through the inherited descriptors", ev, regs.OrigRax, regs.Rdi, err)
	}
}

// BenchmarkHostFileMapping is a new address space's first mapping of a
// host file (its descriptor sent along) and a touch of it, against the
// same of the memory file.
func BenchmarkHostFileMapping(b *testing.B) {
	for _, host := range []bool{false, true} {
		name := "memfile"
		if host {
			name = "hostfile"
		}
		b.Run(name, func(b *testing.B) {
			m := newTestMemory(&testing.T{})
			code := []byte{0xb8, 110, 0, 0, 0, 0x0f, 0x05, 0xeb, 0xf7} // getppid in a loop
			copy(m.mem, code)
			path := filepath.Join(b.TempDir(), "f")
			os.WriteFile(path, code, 0o644)
			fd, _ := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
			defer unix.Close(fd)
			p, err := New(m.fd)
			if err != nil {
				b.Fatal(err)
			}
			p.MapHostFiles(testHostFiles{fd})
			off := uint64(0)
			if host {
				off = hostBase
			}
			for b.Loop() {
				as, err := p.NewAddressSpace()
				if err != nil {
					b.Fatal(err)
				}
				as.MapFile(codeAddr, off, 4096, platform.ProtRead|platform.ProtExec)
				ctx, err := as.NewContext()
				if err != nil {
					b.Fatal(err)
				}
				regs := arch.Registers{Rip: codeAddr, Eflags: arch.InitialEflags}
				if _, err := ctx.Switch(&regs); err != nil {
					b.Fatal(err)
				}
				ctx.Release()
				as.Release()
			}
		})
	}
}
