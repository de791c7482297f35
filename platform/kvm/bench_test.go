package kvm

import (
	"encoding/binary"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/platform"
	"github.com/moat-sandbox/moat/sentry/arch"
)

// BenchmarkSyscallRoundTrip is the platform's share of a guest system
// call: the guest's syscall, the VM exit to the sentry's thread, and the
// entry back to user mode with the result.
func BenchmarkSyscallRoundTrip(b *testing.B) {
	m := newTestMemory(b)
	p, err := New(m.fd)
	if err != nil {
		b.Skipf("no KVM platform here: %v", err)
	}
	// loop: mov $110,%eax; syscall; jmp loop
	copy(m.mem, []byte{0xb8, 110, 0, 0, 0, 0x0f, 0x05, 0xeb, 0xf7})
	as, err := p.NewAddressSpace()
	if err != nil {
		b.Fatal(err)
	}
	defer as.Release()
	if err := as.MapFile(codeAddr, 0, 4096, platform.ProtRead|platform.ProtExec); err != nil {
		b.Fatal(err)
	}
	ctx, err := as.NewContext()
	if err != nil {
		b.Fatal(err)
	}
	defer ctx.Release()
	regs := arch.Registers{Rip: codeAddr, Eflags: arch.InitialEflags}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := ctx.Switch(&regs); err != nil {
			b.Fatal(err)
		}
		regs.Rax = 0
	}
}

// BenchmarkSyscallInsideTheVM is what a guest system call would cost if
// the sentry ran in the VM's supervisor mode, as gVisor's ring0 does: the
// syscall enters a supervisor handler that returns at once (sysretq),
// with no exit to the host's user space. The guest makes b.N of them and
// then leaves the VM once, with ud2. (The vCPU runs without SMEP, so its
// supervisor mode may run the handler from the guest's own page.)
func BenchmarkSyscallInsideTheVM(b *testing.B) {
	m := newTestMemory(b)
	p, err := New(m.fd)
	if err != nil {
		b.Skipf("no KVM platform here: %v", err)
	}
	const handler = 0x100
	// mov $N,%r12; loop: syscall; dec %r12; jnz loop; ud2
	code := []byte{0x49, 0xc7, 0xc4, 0, 0, 0, 0, 0x0f, 0x05, 0x49, 0xff, 0xcc, 0x75, 0xf9, 0x0f, 0x0b}
	binary.LittleEndian.PutUint32(code[3:], uint32(b.N))
	copy(m.mem, code)
	copy(m.mem[handler:], []byte{0x48, 0x0f, 0x07}) // sysretq
	as, err := p.NewAddressSpace()
	if err != nil {
		b.Fatal(err)
	}
	defer as.Release()
	if err := as.MapFile(codeAddr, 0, 4096, platform.ProtRead|platform.ProtExec); err != nil {
		b.Fatal(err)
	}
	pc, err := as.NewContext()
	if err != nil {
		b.Fatal(err)
	}
	defer pc.Release()
	v := pc.(*context).v
	msrs := kvmMSRs{Nmsrs: 1}
	msrs.Entries[0].Index, msrs.Entries[0].Data = msrLSTAR, codeAddr+handler
	if n, err := ioctl(v.fd, kvmSetMSRS, uintptr(unsafe.Pointer(&msrs))); err != nil || n != 1 {
		b.Fatalf("set LSTAR: %d set (%v)", n, err)
	}
	regs := arch.Registers{Rip: codeAddr, Eflags: arch.InitialEflags}
	b.ResetTimer()
	ev, err := pc.Switch(&regs)
	b.StopTimer()
	if err != nil {
		b.Fatal(err)
	}
	if ev.Kind == platform.EventFault && regs.Rip == codeAddr+handler && ev.Trapno == 13 { // #GP
		// sysretq is privileged: the handler ran in user mode.
		b.Skipf("this KVM runs the syscall instruction's target in user mode (PVM does): syscall cannot enter a supervisor-mode sentry here")
	}
	if ev.Kind != platform.EventFault || ev.Signo != int32(unix.SIGILL) || regs.R12 != 0 {
		b.Fatalf("event %+v at %#x with %d calls left: the calls did not all return inside the VM", ev, regs.Rip, regs.R12)
	}
}

// BenchmarkFaultInsideTheVM is the round trip of an exception that the
// VM's supervisor mode handles itself: ud2 in user mode, a #UD handler
// that steps over it and returns with iretq, and no exit to the host's
// user space, b.N times. It is the cheapest entry to a supervisor-mode
// sentry where syscall does not enter supervisor mode. The IDT is a copy
// of the stub's, in a guest page, with its own #UD gate.
func BenchmarkFaultInsideTheVM(b *testing.B) {
	m := newTestMemory(b)
	p, err := New(m.fd)
	if err != nil {
		b.Skipf("no KVM platform here: %v", err)
	}
	const (
		handler = 0x200
		idtOff  = 2 * pageSize
		idtAddr = 0x700000
	)
	// mov $N,%r12; loop: ud2; dec %r12; jnz loop; mov $60,%eax; syscall
	code := []byte{0x49, 0xc7, 0xc4, 0, 0, 0, 0, 0x0f, 0x0b, 0x49, 0xff, 0xcc, 0x75, 0xf9, 0xb8, 60, 0, 0, 0, 0x0f, 0x05}
	binary.LittleEndian.PutUint32(code[3:], uint32(b.N))
	copy(m.mem, code)
	copy(m.mem[handler:], []byte{0x48, 0x83, 0x04, 0x24, 0x02, 0x48, 0xcf}) // addq $2,(%rsp); iretq
	idt := m.mem[idtOff : idtOff+pageSize]
	writeIDT(idt, stubCodeVA+p.stub.entries.vectors)
	lo, hi := idtGate(codeAddr+handler, 0)
	binary.LittleEndian.PutUint64(idt[16*vecUD:], lo)
	binary.LittleEndian.PutUint64(idt[16*vecUD+8:], hi)
	as, err := p.NewAddressSpace()
	if err != nil {
		b.Fatal(err)
	}
	defer as.Release()
	if err := as.MapFile(codeAddr, 0, 4096, platform.ProtRead|platform.ProtExec); err != nil {
		b.Fatal(err)
	}
	if err := as.MapFile(idtAddr, idtOff, pageSize, platform.ProtRead); err != nil {
		b.Fatal(err)
	}
	pc, err := as.NewContext()
	if err != nil {
		b.Fatal(err)
	}
	defer pc.Release()
	v := pc.(*context).v
	v.sregs().IDT.Base = idtAddr
	v.markDirty(kvmSyncX86Sregs)
	regs := arch.Registers{Rip: codeAddr, Eflags: arch.InitialEflags}
	b.ResetTimer()
	ev, err := pc.Switch(&regs)
	b.StopTimer()
	if err != nil {
		b.Fatal(err)
	}
	if ev.Kind != platform.EventSyscall || regs.OrigRax != 60 || regs.R12 != 0 {
		b.Fatalf("event %+v at %#x (nr %d) with %d faults left: the faults did not all return inside the VM", ev, regs.Rip, regs.OrigRax, regs.R12)
	}
}

// BenchmarkExitAndEntry is the bare cost of a VM exit and the entry back,
// with no change of mode: a guest's OUT in user mode faults (#GP) into the
// stub, whose OUT exits; from then on each KVM_RUN resumes the vCPU at
// that OUT, in supervisor mode, and it exits again at once. With sregs,
// every entry also loads the special registers unchanged, as Switch does
// to return from the stub to user mode.
func BenchmarkExitAndEntry(b *testing.B) {
	for _, sregs := range []bool{false, true} {
		name := "regs"
		if sregs {
			name = "regs+sregs"
		}
		b.Run(name, func(b *testing.B) {
			m := newTestMemory(b)
			p, err := New(m.fd)
			if err != nil {
				b.Skipf("no KVM platform here: %v", err)
			}
			copy(m.mem, []byte{0xe6, 0x80}) // out %al,$0x80: #GP in user mode
			as, err := p.NewAddressSpace()
			if err != nil {
				b.Fatal(err)
			}
			defer as.Release()
			if err := as.MapFile(codeAddr, 0, 4096, platform.ProtRead|platform.ProtExec); err != nil {
				b.Fatal(err)
			}
			pc, err := as.NewContext()
			if err != nil {
				b.Fatal(err)
			}
			defer pc.Release()
			regs := arch.Registers{Rip: codeAddr, Eflags: arch.InitialEflags}
			if ev, err := pc.Switch(&regs); err != nil || ev.Kind != platform.EventFault {
				b.Fatalf("event %+v, %v; want the #GP", ev, err)
			}
			v := pc.(*context).v
			const outLen = 2 // outb %al,$imm8
			stubOut := v.regs().Rip - outLen
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				v.regs().Rip = stubOut
				if sregs {
					v.markDirty(kvmSyncX86Regs | kvmSyncX86Sregs)
				} else {
					v.markDirty(kvmSyncX86Regs)
				}
				if _, err := ioctl(v.fd, kvmRun, 0); err != nil {
					b.Fatal(err)
				}
				if r := v.exitReason(); r != exitIO || v.ioPort() != 13 {
					b.Fatalf("exit %d port %#x at %#x, want the stub's OUT for #GP again", r, v.ioPort(), v.regs().Rip)
				}
			}
		})
	}
}
