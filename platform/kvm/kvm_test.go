package kvm

import (
	"encoding/binary"
	"os"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/platform"
	"github.com/moat-sandbox/moat/sentry/arch"
)

// These tests run guest code in a real VM: they need /dev/kvm.

// testMemory is a memory file with a sentry mapping, standing in for the
// sentry's memory manager.
type testMemory struct {
	fd  int
	mem []byte
}

func newTestMemory(t testing.TB) *testMemory {
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
	t.Cleanup(func() { unix.Munmap(mem); unix.Close(fd) })
	return &testMemory{fd: fd, mem: mem}
}

const (
	codeAddr  = 0x400000
	dataAddr  = 0x500000
	stackAddr = 0x600000
)

func getPlatform(t *testing.T, m *testMemory) *Platform {
	t.Helper()
	f, err := os.OpenFile("/dev/kvm", os.O_RDWR, 0)
	if err != nil {
		t.Skipf("these tests run guest code in a VM, and /dev/kvm cannot be opened here: %v", err)
	}
	f.Close()
	p, err := New(m.fd)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return p
}

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

func startRegs() arch.Registers {
	return arch.Registers{Rip: codeAddr, Rsp: dataAddr + 4096, Eflags: arch.InitialEflags}
}

func TestSyscallRoundTrip(t *testing.T) {
	m := newTestMemory(t)
	p := getPlatform(t, m)
	// mov $39,%eax; syscall; mov %rax,%rdi; mov $60,%eax; syscall
	code := []byte{0xb8, 39, 0, 0, 0, 0x0f, 0x05, 0x48, 0x89, 0xc7, 0xb8, 60, 0, 0, 0, 0x0f, 0x05}
	_, ctx := newGuest(t, p, m, code)
	regs := startRegs()
	regs.R12 = 0x1234
	ev, err := ctx.Switch(&regs)
	if err != nil || ev.Kind != platform.EventSyscall || regs.OrigRax != 39 {
		t.Fatalf("first event %+v, nr %d, err %v; want getpid", ev, regs.OrigRax, err)
	}
	if regs.Rip != codeAddr+7 || regs.Rcx != codeAddr+7 {
		t.Errorf("rip %#x, rcx %#x after syscall; want both %#x", regs.Rip, regs.Rcx, codeAddr+7)
	}
	if regs.Rsp != dataAddr+4096 || regs.R12 != 0x1234 {
		t.Errorf("rsp %#x, r12 %#x: the guest's registers did not survive the syscall", regs.Rsp, regs.R12)
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
	regs := startRegs()
	regs.FSBase = dataAddr
	ev, err := ctx.Switch(&regs)
	if err != nil {
		t.Fatal(err)
	}
	if ev.Kind != platform.EventFault || ev.Signo != int32(unix.SIGSEGV) || ev.Addr != 0x700000 || ev.Access != platform.ProtWrite {
		t.Fatalf("event %+v, want a write fault at 0x700000", ev)
	}
	if ev.Trapno != vecPF || ev.ErrorCode&pfWrite == 0 {
		t.Errorf("trapno %d error %#x, want a page fault on a write", ev.Trapno, ev.ErrorCode)
	}
	if regs.Rip != codeAddr+9 {
		t.Errorf("rip %#x, want the faulting instruction at %#x", regs.Rip, codeAddr+9)
	}
	if regs.Rax != 0xdeadbeef {
		t.Errorf("rax %#x: the FS base did not reach the guest", regs.Rax)
	}
	if regs.FSBase != dataAddr {
		t.Errorf("FSBase %#x after the trap, want %#x", regs.FSBase, dataAddr)
	}
}

func TestMappingAddedAfterAFaultIsSeen(t *testing.T) {
	m := newTestMemory(t)
	p := getPlatform(t, m)
	// mov 0x700000,%rax; syscall
	code := []byte{0x48, 0x8b, 0x04, 0x25, 0, 0, 0x70, 0, 0x0f, 0x05}
	as, ctx := newGuest(t, p, m, code)
	regs := startRegs()
	ev, err := ctx.Switch(&regs)
	if err != nil || ev.Kind != platform.EventFault || ev.Access != platform.ProtRead {
		t.Fatalf("event %+v err %v, want a read fault", ev, err)
	}
	binary.LittleEndian.PutUint64(m.mem[2*4096:], 0x600dcafe)
	if err := as.MapFile(0x700000, 2*4096, 4096, platform.ProtRead); err != nil {
		t.Fatal(err)
	}
	ev, err = ctx.Switch(&regs)
	if err != nil || ev.Kind != platform.EventSyscall {
		t.Fatalf("event %+v err %v after mapping, want the syscall", ev, err)
	}
	if regs.Rax != 0x600dcafe {
		t.Fatalf("read %#x, want what the file holds", regs.Rax)
	}
}

func TestUnmapAndProtectTakeEffect(t *testing.T) {
	m := newTestMemory(t)
	p := getPlatform(t, m)
	// loop: movq $1,(%rbx); syscall; jmp loop
	code := []byte{0x48, 0xc7, 0x03, 1, 0, 0, 0, 0x0f, 0x05, 0xeb, 0xf5}
	as, ctx := newGuest(t, p, m, code)
	regs := startRegs()
	regs.Rbx = dataAddr
	if ev, err := ctx.Switch(&regs); err != nil || ev.Kind != platform.EventSyscall {
		t.Fatalf("event %+v err %v, want the first syscall", ev, err)
	}
	if err := as.Protect(dataAddr, 4096, platform.ProtRead); err != nil {
		t.Fatal(err)
	}
	ev, err := ctx.Switch(&regs)
	if err != nil || ev.Kind != platform.EventFault || ev.Access != platform.ProtWrite || ev.Addr != dataAddr {
		t.Fatalf("after Protect(read): event %+v err %v, want a write fault at %#x", ev, err, dataAddr)
	}
	if err := as.Protect(dataAddr, 4096, platform.ProtRead|platform.ProtWrite); err != nil {
		t.Fatal(err)
	}
	if ev, err := ctx.Switch(&regs); err != nil || ev.Kind != platform.EventSyscall {
		t.Fatalf("after Protect(rw): event %+v err %v, want the syscall", ev, err)
	}
	if err := as.Unmap(dataAddr, 4096); err != nil {
		t.Fatal(err)
	}
	regs.Rip = codeAddr
	ev, err = ctx.Switch(&regs)
	if err != nil || ev.Kind != platform.EventFault || ev.ErrorCode&1 != 0 {
		t.Fatalf("after Unmap: event %+v err %v, want a not-present fault", ev, err)
	}
}

func TestCPUExceptionsBecomeLinuxSignals(t *testing.T) {
	for _, c := range []struct {
		name  string
		code  []byte
		signo unix.Signal
		si    int32
		addr  uint64
		rip   uint64
	}{
		{"ud2", []byte{0x0f, 0x0b}, unix.SIGILL, illIllOpn, codeAddr, codeAddr},
		{"int3", []byte{0xcc}, unix.SIGTRAP, 0x80, 0, codeAddr + 1},
		// xor %ecx,%ecx; div %ecx
		{"divide by zero", []byte{0x31, 0xc9, 0xf7, 0xf1}, unix.SIGFPE, fpeIntDiv, codeAddr + 2, codeAddr + 2},
		// hlt is privileged: #GP
		{"hlt", []byte{0xf4}, unix.SIGSEGV, 0x80, 0, codeAddr},
		// out from user mode: #GP, no port is open
		{"out", []byte{0xe6, 0x80}, unix.SIGSEGV, 0x80, 0, codeAddr},
	} {
		t.Run(c.name, func(t *testing.T) {
			m := newTestMemory(t)
			p := getPlatform(t, m)
			_, ctx := newGuest(t, p, m, c.code)
			regs := startRegs()
			ev, err := ctx.Switch(&regs)
			if err != nil {
				t.Fatal(err)
			}
			if ev.Kind != platform.EventFault || ev.Signo != int32(c.signo) || ev.Code != c.si || uint64(ev.Addr) != c.addr {
				t.Fatalf("event %+v, want signal %d code %d addr %#x", ev, c.signo, c.si, c.addr)
			}
			if regs.Rip != c.rip {
				t.Errorf("rip %#x, want %#x", regs.Rip, c.rip)
			}
		})
	}
}

func TestJumpToTheSyscallEntryIsAFault(t *testing.T) {
	m := newTestMemory(t)
	p := getPlatform(t, m)
	// jmp *%rax
	_, ctx := newGuest(t, p, m, []byte{0xff, 0xe0})
	regs := startRegs()
	regs.Rax = p.stub.lstar()
	ev, err := ctx.Switch(&regs)
	if err != nil {
		t.Fatal(err)
	}
	if ev.Kind != platform.EventFault || ev.Signo != int32(unix.SIGSEGV) || uint64(ev.Addr) != p.stub.lstar() {
		t.Fatalf("event %+v, want SIGSEGV at the stub's address %#x", ev, p.stub.lstar())
	}
}

func TestInterruptStopsARunningGuest(t *testing.T) {
	m := newTestMemory(t)
	p := getPlatform(t, m)
	// loop: inc %rax; jmp loop
	_, ctx := newGuest(t, p, m, []byte{0x48, 0xff, 0xc0, 0xeb, 0xfb})
	regs := startRegs()
	go func() {
		time.Sleep(50 * time.Millisecond)
		ctx.Interrupt()
	}()
	start := time.Now()
	ev, err := ctx.Switch(&regs)
	elapsed := time.Since(start)
	if err != nil || ev.Kind != platform.EventInterrupt {
		t.Fatalf("event %+v err %v, want an interrupt", ev, err)
	}
	if regs.Rax == 0 || regs.Rip < codeAddr || regs.Rip >= codeAddr+5 {
		t.Errorf("rax %d rip %#x: the guest did not run, or stopped outside its loop", regs.Rax, regs.Rip)
	}
	// What the host gave the vCPU thread of those 50 ms: some of it, on a
	// loaded host not all (platform.HostCPUBound).
	if ev.GuestTime <= 0 || ev.GuestTime > elapsed {
		t.Errorf("guest time %v for a guest that ran in a Switch of %v", ev.GuestTime, elapsed)
	}
	// The next Switch goes on counting.
	n := regs.Rax
	ctx.Interrupt()
	if ev, err := ctx.Switch(&regs); err != nil || ev.Kind != platform.EventInterrupt || regs.Rax != n {
		t.Fatalf("an interrupt pending before Switch: event %+v err %v rax %d (was %d)", ev, err, regs.Rax, n)
	}
}

func TestFPStateFollowsTheThread(t *testing.T) {
	m := newTestMemory(t)
	p := getPlatform(t, m)
	// movq %rax,%xmm1; syscall; movq %xmm1,%rbx; syscall
	code := []byte{0x66, 0x48, 0x0f, 0x6e, 0xc8, 0x0f, 0x05, 0x66, 0x48, 0x0f, 0x7e, 0xcb, 0x0f, 0x05}
	_, ctx := newGuest(t, p, m, code)
	regs := startRegs()
	regs.Rax = 0x1122334455667788
	if ev, err := ctx.Switch(&regs); err != nil || ev.Kind != platform.EventSyscall {
		t.Fatalf("event %+v err %v", ev, err)
	}
	fp := ctx.FPState()
	const xmm1 = 160 + 16
	if got := binary.LittleEndian.Uint64(fp[xmm1:]); got != 0x1122334455667788 {
		t.Fatalf("FPState's xmm1 is %#x, want what the guest put there", got)
	}
	if binary.LittleEndian.Uint32(fp[swBytesOff:]) != fpXstateMag1 || int(binary.LittleEndian.Uint32(fp[swBytesOff+16:])) != len(fp) {
		t.Errorf("software bytes do not describe the %d-byte state", len(fp))
	}
	binary.LittleEndian.PutUint64(fp[xmm1:], 0xabcdef)
	if ev, err := ctx.Switch(&regs); err != nil || ev.Kind != platform.EventSyscall {
		t.Fatalf("event %+v err %v", ev, err)
	}
	if regs.Rbx != 0xabcdef {
		t.Errorf("guest read xmm1 = %#x, want the sentry's change 0xabcdef", regs.Rbx)
	}
}

func TestGuestReadsTheHostTSC(t *testing.T) {
	m := newTestMemory(t)
	p := getPlatform(t, m)
	// rdtsc; syscall
	_, ctx := newGuest(t, p, m, []byte{0x0f, 0x31, 0x0f, 0x05})
	regs := startRegs()
	before := hostTSC()
	if ev, err := ctx.Switch(&regs); err != nil || ev.Kind != platform.EventSyscall {
		t.Fatalf("event %+v err %v", ev, err)
	}
	after := hostTSC()
	guest := regs.Rdx<<32 | regs.Rax&0xffffffff
	if guest < before || guest > after {
		t.Fatalf("guest TSC %d outside the host's [%d, %d]: the vDSO's clocks would be wrong", guest, before, after)
	}
}

// TestSyncTakesAccessFromARunningThread pins the shootdown: once Sync
// returns, a thread of the address space that was running guest code all
// along can no longer write to a page made read-only.
func TestSyncTakesAccessFromARunningThread(t *testing.T) {
	m := newTestMemory(t)
	p := getPlatform(t, m)
	// loop: movq $1,(%rbx); incq %rcx; jmp loop
	as, ctx := newGuest(t, p, m, []byte{0x48, 0xc7, 0x03, 1, 0, 0, 0, 0x48, 0xff, 0xc1, 0xeb, 0xf4})
	type result struct {
		ev   platform.Event
		regs arch.Registers
		err  error
	}
	done := make(chan result, 1)
	go func() {
		regs := startRegs()
		regs.Rbx = dataAddr
		ev, err := ctx.Switch(&regs)
		done <- result{ev, regs, err}
	}()
	// Let it run, then take write access away under it.
	deadline := time.Now().Add(5 * time.Second)
	for binary.LittleEndian.Uint64(m.mem[4096:]) != 1 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if err := as.Protect(dataAddr, 4096, platform.ProtRead); err != nil {
		t.Fatal(err)
	}
	if err := as.Sync(); err != nil {
		t.Fatal(err)
	}
	// The guest may have been between its write and the next: from now on
	// no write may land.
	binary.LittleEndian.PutUint64(m.mem[4096:], 0)
	select {
	case r := <-done:
		if r.err != nil || r.ev.Kind != platform.EventFault || r.ev.Access != platform.ProtWrite {
			t.Fatalf("event %+v err %v, want a write fault", r.ev, r.err)
		}
	case <-time.After(5 * time.Second):
		ctx.Interrupt()
		<-done
		t.Fatal("the running thread kept writing after Sync")
	}
	if v := binary.LittleEndian.Uint64(m.mem[4096:]); v != 0 {
		t.Fatalf("a write landed after Sync returned")
	}
}

func TestKillEndsARunningThread(t *testing.T) {
	m := newTestMemory(t)
	p := getPlatform(t, m)
	as, ctx := newGuest(t, p, m, []byte{0xeb, 0xfe}) // jmp .
	done := make(chan error, 1)
	go func() {
		regs := startRegs()
		_, err := ctx.Switch(&regs)
		done <- err
	}()
	time.Sleep(20 * time.Millisecond)
	as.Kill()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("Switch returned without an error after Kill")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Switch still running 5s after Kill")
	}
}

// TestReusedVCPUSeesOnlyItsNewAddressSpace runs two address spaces that map
// the same address to different pages, one after the other on the same
// vCPU: the second must not see the first's translation.
func TestReusedVCPUSeesOnlyItsNewAddressSpace(t *testing.T) {
	m := newTestMemory(t)
	p := getPlatform(t, m)
	// mov 0x700000,%rax; syscall
	code := []byte{0x48, 0x8b, 0x04, 0x25, 0, 0, 0x70, 0, 0x0f, 0x05}
	binary.LittleEndian.PutUint64(m.mem[2*4096:], 111)
	binary.LittleEndian.PutUint64(m.mem[3*4096:], 222)
	for i, want := range []uint64{111, 222, 111} {
		as, ctx := newGuest(t, p, m, code)
		if err := as.MapFile(0x700000, uint64(2+i%2)*4096, 4096, platform.ProtRead); err != nil {
			t.Fatal(err)
		}
		c := ctx.(*context)
		regs := startRegs()
		ev, err := ctx.Switch(&regs)
		if err != nil || ev.Kind != platform.EventSyscall {
			t.Fatalf("run %d: event %+v err %v", i, ev, err)
		}
		if regs.Rax != want {
			t.Fatalf("run %d on vCPU %d read %d, want %d", i, c.v.id, regs.Rax, want)
		}
		ctx.Release()
		as.Release()
	}
}

func TestNewThreadStartsWithCleanFPState(t *testing.T) {
	m := newTestMemory(t)
	p := getPlatform(t, m)
	// movq %rax,%xmm1; syscall
	_, ctx := newGuest(t, p, m, []byte{0x66, 0x48, 0x0f, 0x6e, 0xc8, 0x0f, 0x05})
	regs := startRegs()
	regs.Rax = 0x5555
	if _, err := ctx.Switch(&regs); err != nil {
		t.Fatal(err)
	}
	ctx.Release()
	// movq %xmm1,%rbx; syscall (the same vCPU, for a new thread)
	_, ctx2 := newGuest(t, p, m, []byte{0x66, 0x48, 0x0f, 0x7e, 0xcb, 0x0f, 0x05})
	regs = startRegs()
	regs.Rbx = 1
	if _, err := ctx2.Switch(&regs); err != nil {
		t.Fatal(err)
	}
	if regs.Rbx != 0 {
		t.Fatalf("a new thread's xmm1 holds %#x, left by the vCPU's last thread", regs.Rbx)
	}
}

// TestReductionsSurviveShadowRecycling makes enough reductions to recycle
// retired page tables (through zapShadows) and checks that the guest sees
// each one.
func TestReductionsSurviveShadowRecycling(t *testing.T) {
	m := newTestMemory(t)
	p := getPlatform(t, m)
	// loop: movq $1,(%rbx); syscall; jmp loop
	as, ctx := newGuest(t, p, m, []byte{0x48, 0xc7, 0x03, 1, 0, 0, 0, 0x0f, 0x05, 0xeb, 0xf5})
	regs := startRegs()
	regs.Rbx = dataAddr
	for i := 0; i < quarantineMax/3; i++ {
		if err := as.Protect(dataAddr, 4096, platform.ProtRead); err != nil {
			t.Fatal(err)
		}
		ev, err := ctx.Switch(&regs)
		if err != nil || ev.Kind != platform.EventFault || ev.Access != platform.ProtWrite {
			t.Fatalf("round %d: event %+v err %v, want a write fault", i, ev, err)
		}
		if err := as.Protect(dataAddr, 4096, platform.ProtRead|platform.ProtWrite); err != nil {
			t.Fatal(err)
		}
		if ev, err := ctx.Switch(&regs); err != nil || ev.Kind != platform.EventSyscall {
			t.Fatalf("round %d: event %+v err %v, want the syscall after the write", i, ev, err)
		}
		regs.Rip = codeAddr
	}
}

// TestFaultKeepsEveryRegister checks that an exception's trip through the
// stub leaves the guest's general registers as they were: the kernel
// resumes the thread with them.
func TestFaultKeepsEveryRegister(t *testing.T) {
	for _, c := range []struct {
		name string
		code []byte
	}{
		{"ud2", []byte{0x0f, 0x0b}},
		// movq $1,0x700000 (unmapped)
		{"page fault", []byte{0x48, 0xc7, 0x04, 0x25, 0, 0, 0x70, 0, 1, 0, 0, 0}},
	} {
		t.Run(c.name, func(t *testing.T) {
			m := newTestMemory(t)
			p := getPlatform(t, m)
			_, ctx := newGuest(t, p, m, c.code)
			regs := startRegs()
			want := []*uint64{&regs.Rax, &regs.Rbx, &regs.Rcx, &regs.Rdx, &regs.Rsi, &regs.Rdi, &regs.Rbp,
				&regs.R8, &regs.R9, &regs.R10, &regs.R11, &regs.R12, &regs.R13, &regs.R14, &regs.R15}
			for i, r := range want {
				*r = 0x1000 + uint64(i)
			}
			ev, err := ctx.Switch(&regs)
			if err != nil || ev.Kind != platform.EventFault {
				t.Fatalf("event %+v err %v, want a fault", ev, err)
			}
			for i, r := range want {
				if *r != 0x1000+uint64(i) {
					t.Errorf("register %d is %#x after the fault, want %#x", i, *r, 0x1000+uint64(i))
				}
			}
			if regs.Rsp != dataAddr+4096 || regs.Eflags&rflagsIF == 0 {
				t.Errorf("rsp %#x rflags %#x after the fault", regs.Rsp, regs.Eflags)
			}
		})
	}
}

func TestGuestCodeRunsInTheSentrysProcess(t *testing.T) {
	m := newTestMemory(t)
	p := getPlatform(t, m)
	as, err := p.NewAddressSpace()
	if err != nil {
		t.Fatal(err)
	}
	defer as.Release()
	hp, ok := as.(interface{ HostPID() int })
	if !ok || hp.HostPID() != os.Getpid() {
		t.Errorf("the address space does not name the sentry (pid %d) as the host process running it", os.Getpid())
	}
}
