package kvm

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"unsafe"
)

// TestABIMatchesLinuxHeaders compiles a C program against <linux/kvm.h>
// and <signal.h> and checks that every ioctl number, constant, size and
// offset this package hard-codes is the kernel's.
func TestABIMatchesLinuxHeaders(t *testing.T) {
	if _, err := exec.LookPath("gcc"); err != nil {
		t.Skip("gcc not installed (make test installs it): cannot read <linux/kvm.h>")
	}
	var r kvmRegs
	var s kvmSregs
	checks := []struct {
		c     string
		value uint64
	}{
		{"KVM_GET_API_VERSION", kvmGetAPIVersion},
		{"KVM_CREATE_VM", kvmCreateVM},
		{"KVM_CHECK_EXTENSION", kvmCheckExtension},
		{"KVM_GET_VCPU_MMAP_SIZE", kvmGetVCPUMmapSize},
		{"KVM_GET_SUPPORTED_CPUID", kvmGetSupportedCPUID},
		{"KVM_SET_USER_MEMORY_REGION", kvmSetUserMemoryRegion},
		{"KVM_CREATE_VCPU", kvmCreateVCPU},
		{"KVM_RUN", kvmRun},
		{"KVM_GET_REGS", kvmGetRegs},
		{"KVM_SET_REGS", kvmSetRegs},
		{"KVM_GET_SREGS", kvmGetSregs},
		{"KVM_SET_SREGS", kvmSetSregs},
		{"KVM_SET_CPUID2", kvmSetCPUID2},
		{"KVM_GET_XSAVE", kvmGetXsave},
		{"KVM_SET_XSAVE", kvmSetXsave},
		{"KVM_SET_XCRS", kvmSetXCRS},
		{"KVM_SET_MSRS", kvmSetMSRS},
		{"KVM_SET_DEVICE_ATTR", kvmSetDeviceAttr},
		{"KVM_API_VERSION", kvmAPIVersion},
		{"KVM_CAP_SYNC_REGS", kvmCapSyncRegs},
		{"KVM_CAP_IMMEDIATE_EXIT", kvmCapImmediateExit},
		{"KVM_CAP_NR_MEMSLOTS", kvmCapNrMemslots},
		{"KVM_CAP_MAX_VCPUS", kvmCapMaxVCPUs},
		{"KVM_CAP_XSAVE", kvmCapXsave},
		{"KVM_CAP_XCRS", kvmCapXCRS},
		{"KVM_SYNC_X86_REGS", kvmSyncX86Regs},
		{"KVM_SYNC_X86_SREGS", kvmSyncX86Sregs},
		{"KVM_VCPU_TSC_CTRL", kvmVCPUTSCCtrl},
		{"KVM_VCPU_TSC_OFFSET", kvmVCPUTSCOffset},
		{"KVM_EXIT_UNKNOWN", exitUnknown},
		{"KVM_EXIT_EXCEPTION", exitException},
		{"KVM_EXIT_IO", exitIO},
		{"KVM_EXIT_HLT", exitHLT},
		{"KVM_EXIT_MMIO", exitMMIO},
		{"KVM_EXIT_SHUTDOWN", exitShutdown},
		{"KVM_EXIT_FAIL_ENTRY", exitFailEntry},
		{"KVM_EXIT_INTR", exitIntr},
		{"KVM_EXIT_INTERNAL_ERROR", exitInternalError},
		{"sizeof(struct kvm_regs)", uint64(unsafe.Sizeof(r))},
		{"offsetof(struct kvm_regs, rip)", uint64(unsafe.Offsetof(r.Rip))},
		{"offsetof(struct kvm_regs, r8)", uint64(unsafe.Offsetof(r.R8))},
		{"sizeof(struct kvm_segment)", uint64(unsafe.Sizeof(s.CS))},
		{"offsetof(struct kvm_segment, selector)", uint64(unsafe.Offsetof(s.CS.Selector))},
		{"offsetof(struct kvm_segment, unusable)", uint64(unsafe.Offsetof(s.CS.Unusable))},
		{"sizeof(struct kvm_sregs)", uint64(unsafe.Sizeof(s))},
		{"offsetof(struct kvm_sregs, tr)", uint64(unsafe.Offsetof(s.TR))},
		{"offsetof(struct kvm_sregs, gdt)", uint64(unsafe.Offsetof(s.GDT))},
		{"offsetof(struct kvm_sregs, cr0)", uint64(unsafe.Offsetof(s.CR0))},
		{"offsetof(struct kvm_sregs, efer)", uint64(unsafe.Offsetof(s.EFER))},
		{"offsetof(struct kvm_sregs, interrupt_bitmap)", uint64(unsafe.Offsetof(s.InterruptBitmap))},
		{"sizeof(struct kvm_userspace_memory_region)", uint64(unsafe.Sizeof(kvmUserspaceMemoryRegion{}))},
		{"sizeof(struct kvm_cpuid_entry2)", uint64(unsafe.Sizeof(kvmCPUIDEntry2{}))},
		{"offsetof(struct kvm_cpuid2, entries)", uint64(unsafe.Offsetof(kvmCPUID2{}.Entries))},
		{"sizeof(struct kvm_xcrs)", uint64(unsafe.Sizeof(kvmXcrs{}))},
		{"offsetof(struct kvm_msrs, entries)", uint64(unsafe.Offsetof(kvmMSRs{}.Entries))},
		{"sizeof(struct kvm_msr_entry)", uint64(unsafe.Sizeof(kvmMSRs{}.Entries[0]))},
		{"sizeof(struct kvm_device_attr)", uint64(unsafe.Sizeof(kvmDeviceAttr{}))},
		{"sizeof(struct kvm_xsave)", xsaveAreaSize},
		{"offsetof(struct kvm_run, immediate_exit)", runImmediateExit},
		{"offsetof(struct kvm_run, exit_reason)", runExitReason},
		{"offsetof(struct kvm_run, io)", runExitData},
		{"offsetof(struct kvm_run, kvm_valid_regs)", runValidRegs},
		{"offsetof(struct kvm_run, kvm_dirty_regs)", runDirtyRegs},
		{"offsetof(struct kvm_run, s)", runSyncRegs},
		{"offsetof(struct kvm_run, s) + offsetof(struct kvm_sync_regs, sregs)", runSyncSregs},
		{"offsetof(struct kvm_run, io.direction) - offsetof(struct kvm_run, io)", ioDirection},
		{"offsetof(struct kvm_run, io.size) - offsetof(struct kvm_run, io)", ioSize},
		{"offsetof(struct kvm_run, io.port) - offsetof(struct kvm_run, io)", ioPort},
		{"FPE_INTDIV", fpeIntDiv}, {"FPE_FLTDIV", fpeFltDiv}, {"FPE_FLTOVF", fpeFltOvf},
		{"FPE_FLTUND", fpeFltUnd}, {"FPE_FLTRES", fpeFltRes}, {"FPE_FLTINV", fpeFltInv},
		{"ILL_ILLOPN", illIllOpn}, {"BUS_ADRALN", busAdrAln}, {"TRAP_BRKPT", trapBrkpt}, {"TRAP_TRACE", trapTrace},
	}
	var src strings.Builder
	src.WriteString("#define _GNU_SOURCE\n#include <stdio.h>\n#include <stddef.h>\n#include <signal.h>\n#include <linux/kvm.h>\nint main(void) {\n")
	for _, c := range checks {
		fmt.Fprintf(&src, "\tprintf(\"%%llu\\n\", (unsigned long long)(%s));\n", c.c)
	}
	src.WriteString("\treturn 0;\n}\n")
	dir := t.TempDir()
	cfile, bin := filepath.Join(dir, "abi.c"), filepath.Join(dir, "abi")
	if err := os.WriteFile(cfile, []byte(src.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("gcc", "-o", bin, cfile).CombinedOutput(); err != nil {
		t.Fatalf("compile against <linux/kvm.h>: %v\n%s", err, out)
	}
	out, err := exec.Command(bin).Output()
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Fields(string(out))
	if len(lines) != len(checks) {
		t.Fatalf("%d values printed, want %d", len(lines), len(checks))
	}
	for i, c := range checks {
		v, err := strconv.ParseUint(lines[i], 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		if v != c.value {
			t.Errorf("%s is %#x in the kernel's headers, %#x here", c.c, v, c.value)
		}
	}
}
