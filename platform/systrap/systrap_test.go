package systrap

import (
	"encoding/binary"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/platform"
	"github.com/moat-sandbox/moat/sentry/arch"
)

// testMemory is a memory file with a sentry mapping, standing in for the
// sentry's memory manager.
type testMemory struct {
	fd  int
	mem []byte
}

func newTestMemory(t *testing.T) *testMemory {
	t.Helper()
	fd, err := unix.MemfdCreate("test-mem", unix.MFD_CLOEXEC)
	if err != nil {
		t.Fatal(err)
	}
	if err := unix.Ftruncate(fd, 1<<20); err != nil {
		t.Fatal(err)
	}
	mem, err := unix.Mmap(fd, 0, 1<<20, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	return &testMemory{fd: fd, mem: mem}
}

const (
	codeAddr  = 0x400000
	dataAddr  = 0x500000
	stackAddr = 0x600000
)

// newGuest maps code at codeAddr (file offset 0) and a data page at
// dataAddr (offset 4096) and returns a context ready to run it.
func newGuest(t *testing.T, p *Platform, m *testMemory, code []byte) (platform.AddressSpace, platform.Context) {
	t.Helper()
	copy(m.mem, code)
	as, err := p.NewAddressSpace()
	if err != nil {
		t.Fatalf("NewAddressSpace: %v", err)
	}
	t.Cleanup(as.Release)
	if err := as.MapFile(codeAddr, 0, 4096, platform.ProtRead|platform.ProtExec); err != nil {
		t.Fatal(err)
	}
	if err := as.MapFile(dataAddr, 4096, 4096, platform.ProtRead|platform.ProtWrite); err != nil {
		t.Fatal(err)
	}
	ctx, err := as.NewContext()
	if err != nil {
		t.Fatalf("NewContext: %v", err)
	}
	return as, ctx
}

func getPlatform(t *testing.T, m *testMemory) *Platform {
	t.Helper()
	p, err := New(m.fd)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return p
}

func TestSyscallRoundTrip(t *testing.T) {
	m := newTestMemory(t)
	p := getPlatform(t, m)
	// mov $39,%eax; syscall; mov %rax,%rdi; mov $60,%eax; syscall
	code := []byte{0xb8, 39, 0, 0, 0, 0x0f, 0x05, 0x48, 0x89, 0xc7, 0xb8, 60, 0, 0, 0, 0x0f, 0x05}
	_, ctx := newGuest(t, p, m, code)
	regs := arch.Registers{Rip: codeAddr, Rsp: dataAddr + 4096, Eflags: arch.InitialEflags}
	ev, err := ctx.Switch(&regs)
	if err != nil || ev.Kind != platform.EventSyscall || regs.OrigRax != 39 {
		t.Fatalf("first event %+v, nr %d, err %v; want getpid", ev, regs.OrigRax, err)
	}
	if regs.Rip != codeAddr+7 {
		t.Errorf("rip after syscall %#x, want %#x", regs.Rip, codeAddr+7)
	}
	regs.Rax = 4242
	ev, err = ctx.Switch(&regs)
	if err != nil || ev.Kind != platform.EventSyscall || regs.OrigRax != 60 {
		t.Fatalf("second event %+v, nr %d, err %v; want exit", ev, regs.OrigRax, err)
	}
	if regs.Rdi != 4242 {
		t.Errorf("guest saw getpid() = %d, want the sentry's 4242", regs.Rdi)
	}
}

func TestFaultAndFSBase(t *testing.T) {
	m := newTestMemory(t)
	p := getPlatform(t, m)
	// mov %fs:0,%rax; movq $1,0x700000 (unmapped)
	code := []byte{0x64, 0x48, 0x8b, 0x04, 0x25, 0, 0, 0, 0, 0x48, 0xc7, 0x04, 0x25, 0, 0, 0x70, 0, 1, 0, 0, 0}
	_, ctx := newGuest(t, p, m, code)
	copy(m.mem[4096:], []byte{0xef, 0xbe, 0xad, 0xde})
	regs := arch.Registers{Rip: codeAddr, Rsp: dataAddr + 4096, Eflags: arch.InitialEflags, FSBase: dataAddr}
	ev, err := ctx.Switch(&regs)
	if err != nil {
		t.Fatal(err)
	}
	if ev.Kind != platform.EventFault || ev.Signo != int32(unix.SIGSEGV) || ev.Addr != 0x700000 || ev.Access != platform.ProtWrite {
		t.Fatalf("event %+v, want a write fault at 0x700000", ev)
	}
	if regs.Rax != 0xdeadbeef {
		t.Errorf("rax %#x: the FS base did not reach the guest", regs.Rax)
	}
	if regs.FSBase != dataAddr {
		t.Errorf("FSBase %#x after the trap, want %#x", regs.FSBase, dataAddr)
	}
}

// TestNoHostSyscallFromStubCode jumps into the stub's own code at a syscall
// instruction: the call must still trap to the sentry.
func TestNoHostSyscallFromStubCode(t *testing.T) {
	m := newTestMemory(t)
	p := getPlatform(t, m)
	e := p.entries
	// The restorer is "mov $15,%eax; syscall": jump past the mov with rax=getpid.
	target := codeVA + e.restorer + 5
	// mov $39,%eax; movabs $target,%rcx; jmp *%rcx
	code := []byte{0xb8, 39, 0, 0, 0, 0x48, 0xb9}
	for i := 0; i < 8; i++ {
		code = append(code, byte(target>>(8*i)))
	}
	code = append(code, 0xff, 0xe1)
	_, ctx := newGuest(t, p, m, code)
	regs := arch.Registers{Rip: codeAddr, Rsp: dataAddr + 4096, Eflags: arch.InitialEflags}
	ev, err := ctx.Switch(&regs)
	if err != nil || ev.Kind != platform.EventSyscall || regs.OrigRax != 39 {
		t.Fatalf("event %+v nr %d err %v: a syscall from stub code did not trap", ev, regs.OrigRax, err)
	}
}

func TestStubDeathIsReported(t *testing.T) {
	m := newTestMemory(t)
	p := getPlatform(t, m)
	code := []byte{0xeb, 0xfe} // jmp . (spin forever)
	as, ctx := newGuest(t, p, m, code)
	go func() {
		time.Sleep(50 * time.Millisecond)
		unix.Kill(as.(*addressSpace).stub.pid, unix.SIGKILL)
	}()
	regs := arch.Registers{Rip: codeAddr, Rsp: dataAddr + 4096, Eflags: arch.InitialEflags}
	if _, err := ctx.Switch(&regs); err != errStubDead {
		t.Fatalf("Switch on a killed stub: %v, want errStubDead", err)
	}
}

func TestInterrupt(t *testing.T) {
	m := newTestMemory(t)
	p := getPlatform(t, m)
	_, ctx := newGuest(t, p, m, []byte{0xeb, 0xfe})
	go func() {
		time.Sleep(20 * time.Millisecond)
		ctx.Interrupt()
	}()
	regs := arch.Registers{Rip: codeAddr, Rsp: dataAddr + 4096, Eflags: arch.InitialEflags}
	ev, err := ctx.Switch(&regs)
	if err != nil || ev.Kind != platform.EventInterrupt {
		t.Fatalf("event %+v err %v, want interrupt", ev, err)
	}
}

func BenchmarkSyscallRoundTrip(b *testing.B) {
	fd, _ := unix.MemfdCreate("bench-mem", unix.MFD_CLOEXEC)
	unix.Ftruncate(fd, 1<<20)
	mem, _ := unix.Mmap(fd, 0, 1<<20, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	// loop: mov $110,%eax; syscall; jmp loop
	copy(mem, []byte{0xb8, 110, 0, 0, 0, 0x0f, 0x05, 0xeb, 0xf7})
	p, err := New(fd)
	if err != nil {
		b.Fatal(err)
	}
	as, _ := p.NewAddressSpace()
	defer as.Release()
	as.MapFile(codeAddr, 0, 4096, platform.ProtRead|platform.ProtExec)
	ctx, err := as.NewContext()
	if err != nil {
		b.Fatal(err)
	}
	regs := arch.Registers{Rip: codeAddr, Eflags: arch.InitialEflags}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := ctx.Switch(&regs); err != nil {
			b.Fatal(err)
		}
		regs.Rax = 0
	}
}

// TestFPState: the floating-point state the guest left is readable, and
// what the sentry writes there is what the guest resumes with.
func TestFPState(t *testing.T) {
	m := newTestMemory(t)
	p := getPlatform(t, m)
	// movq %rax,%xmm0; mov $39,%eax; syscall; movq %xmm0,%rdi; mov $60,%eax; syscall
	code := []byte{0x66, 0x48, 0x0f, 0x6e, 0xc0, 0xb8, 39, 0, 0, 0, 0x0f, 0x05,
		0x66, 0x48, 0x0f, 0x7e, 0xc7, 0xb8, 60, 0, 0, 0, 0x0f, 0x05}
	_, ctx := newGuest(t, p, m, code)
	regs := arch.Registers{Rip: codeAddr, Rsp: dataAddr + 4096, Eflags: arch.InitialEflags, Rax: 0x1122334455667788}
	if _, err := ctx.Switch(&regs); err != nil {
		t.Fatal(err)
	}
	fp := ctx.FPState()
	const xmm0 = 160 // offset of xmm0 in the FXSAVE area
	if len(fp) < 512 || binary.LittleEndian.Uint64(fp[xmm0:]) != 0x1122334455667788 {
		t.Fatalf("xmm0 not found in the fp state (len %d)", len(fp))
	}
	binary.LittleEndian.PutUint64(fp[xmm0:], 0xcafef00d)
	if _, err := ctx.Switch(&regs); err != nil || regs.OrigRax != 60 {
		t.Fatalf("second trap: %v nr %d", err, regs.OrigRax)
	}
	if regs.Rdi != 0xcafef00d {
		t.Fatalf("the guest resumed with xmm0 %#x, not what the sentry wrote", regs.Rdi)
	}
}

// BenchmarkAddressSpaceLifecycle is the platform's share of a guest fork
// and exit: a new address space with a mapping and a thread that runs to
// its first system call, then everything released.
func BenchmarkAddressSpaceLifecycle(b *testing.B) {
	fd, _ := unix.MemfdCreate("bench-mem", unix.MFD_CLOEXEC)
	unix.Ftruncate(fd, 1<<20)
	mem, _ := unix.Mmap(fd, 0, 1<<20, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	copy(mem, []byte{0xb8, 110, 0, 0, 0, 0x0f, 0x05, 0xeb, 0xf7}) // getppid in a loop
	p, err := New(fd)
	if err != nil {
		b.Fatal(err)
	}
	var tAS, tCtx, tRun, tRel time.Duration
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		as, err := p.NewAddressSpace()
		if err != nil {
			b.Fatal(err)
		}
		as.MapFile(codeAddr, 0, 4096, platform.ProtRead|platform.ProtExec)
		t1 := time.Now()
		ctx, err := as.NewContext()
		if err != nil {
			b.Fatal(err)
		}
		t2 := time.Now()
		regs := arch.Registers{Rip: codeAddr, Eflags: arch.InitialEflags}
		if _, err := ctx.Switch(&regs); err != nil {
			b.Fatal(err)
		}
		t3 := time.Now()
		ctx.Release()
		as.Release()
		t4 := time.Now()
		tAS, tCtx, tRun, tRel = tAS+t1.Sub(t0), tCtx+t2.Sub(t1), tRun+t3.Sub(t2), tRel+t4.Sub(t3)
	}
	n := time.Duration(b.N)
	b.ReportMetric(float64((tAS / n).Microseconds()), "as-µs")
	b.ReportMetric(float64((tCtx / n).Microseconds()), "ctx-µs")
	b.ReportMetric(float64((tRun / n).Microseconds()), "run-µs")
	b.ReportMetric(float64((tRel / n).Microseconds()), "release-µs")
}

// TestGuestTime: the time a guest computes is reported with the event that
// ends it, and is visible while it runs; the kernel's time between two
// Switches is reported with the next event.
func TestGuestTime(t *testing.T) {
	m := newTestMemory(t)
	p := getPlatform(t, m)
	// dec %rcx; jnz .-3; mov $39,%eax; syscall
	code := []byte{0x48, 0xff, 0xc9, 0x75, 0xfb, 0xb8, 39, 0, 0, 0, 0x0f, 0x05}
	_, ctx := newGuest(t, p, m, code)
	regs := arch.Registers{Rip: codeAddr, Rsp: dataAddr + 4096, Eflags: arch.InitialEflags, Rcx: 300_000_000}
	done := make(chan struct{})
	running := make(chan time.Duration, 1)
	go func() {
		var seen time.Duration
		for seen == 0 {
			select {
			case <-done:
				running <- seen
				return
			case <-time.After(time.Millisecond):
				seen = ctx.Running()
			}
		}
		running <- seen
	}()
	start := time.Now()
	ev, err := ctx.Switch(&regs)
	wall := time.Since(start)
	close(done)
	if err != nil || ev.Kind != platform.EventSyscall {
		t.Fatalf("event %+v err %v, want getpid", ev, err)
	}
	// The TSC's rate is a first estimate for a second after New, and the
	// clock reads that bound the Switch are not the stub's: a loaded host
	// puts a few per cent between them. A run this long counts the CPU the
	// host gave the stub thread (platform.HostCPUBound), which a loaded
	// host makes less than the Switch's time, but not much less.
	slack := wall / 20
	if ev.GuestTime < wall/10 || ev.GuestTime > wall+slack {
		t.Errorf("guest time %v for a Switch of %v spent computing", ev.GuestTime, wall)
	}
	if r := <-running; r <= 0 || r > wall+slack {
		t.Errorf("Running() = %v while the guest computed (Switch took %v)", r, wall)
	}
	if ctx.Running() != 0 {
		t.Error("Running() is not 0 between Switches")
	}
	time.Sleep(2 * time.Millisecond)
	regs.Rcx = 1
	ev, err = ctx.Switch(&regs)
	if err != nil || ev.KernelTime < 2*time.Millisecond || ev.KernelTime > time.Second {
		t.Errorf("kernel time %v (err %v) after 2ms between Switches", ev.KernelTime, err)
	}
}
