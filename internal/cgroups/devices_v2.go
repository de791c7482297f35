package cgroups

import (
	"fmt"
	"strings"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/link"
	"golang.org/x/sys/unix"

	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// On cgroup v2 the device controller is a program: a
// BPF_PROG_TYPE_CGROUP_DEVICE program attached to the cgroup sees each
// open or mknod of a device node by its processes and answers 1 (allow)
// or 0 (deny). The one moat attaches takes the config's rules as runc's
// does: the last rule that matches the device and covers every access
// asked decides, and a device no rule matches is denied. (v1's kernel
// list differs in one corner: there a deny rule only takes back an allow
// of exactly the same devices.)

// The program's context, struct bpf_cgroup_dev_ctx (linux/bpf.h): the
// access type (the device type in the low 16 bits, the access in the
// high) and the device's major and minor.
const (
	devCtxAccessType = 0
	devCtxMajor      = 4
	devCtxMinor      = 8

	// BPF_DEVCG_DEV_* and BPF_DEVCG_ACC_*.
	devcgBlock = 1
	devcgChar  = 2
	devcgMknod = 1
	devcgRead  = 2
	devcgWrite = 4
)

// deviceProgram builds the program for rules.
func deviceProgram(rules []specs.LinuxDeviceCgroup) asm.Instructions {
	const (
		typ    = asm.R2
		access = asm.R3
		major  = asm.R4
		minor  = asm.R5
		tmp    = asm.R6
	)
	insns := asm.Instructions{
		asm.LoadMem(typ, asm.R1, devCtxAccessType, asm.Word),
		asm.And.Imm32(typ, 0xffff),
		asm.LoadMem(access, asm.R1, devCtxAccessType, asm.Word),
		asm.RSh.Imm32(access, 16),
		asm.LoadMem(major, asm.R1, devCtxMajor, asm.Word),
		asm.LoadMem(minor, asm.R1, devCtxMinor, asm.Word),
	}
	// Last rule first: the first to match decides.
	pending := ""
	for i := len(rules) - 1; i >= 0; i-- {
		d := rules[i]
		next := fmt.Sprintf("rule%d", i)
		// Type a is every device with every access, as v1 takes it.
		var match asm.Instructions
		if d.Type == "b" || d.Type == "c" {
			devType := int32(devcgChar)
			if d.Type == "b" {
				devType = devcgBlock
			}
			match = append(match, asm.JNE.Imm32(typ, devType, next))
			// The rule covers the request only if it grants every access asked.
			if mask := accessMask(d.Access); mask != devcgMknod|devcgRead|devcgWrite {
				match = append(match,
					asm.Mov.Reg32(tmp, access),
					asm.And.Imm32(tmp, ^mask),
					asm.JNE.Imm32(tmp, 0, next))
			}
			if d.Major != nil && *d.Major != -1 {
				match = append(match, asm.JNE.Imm32(major, int32(*d.Major), next))
			}
			if d.Minor != nil && *d.Minor != -1 {
				match = append(match, asm.JNE.Imm32(minor, int32(*d.Minor), next))
			}
		}
		verdict := int32(0)
		if d.Allow {
			verdict = 1
		}
		block := append(match, asm.Mov.Imm32(asm.R0, verdict), asm.Return())
		if pending != "" {
			// The previous rule's miss lands on this block's start.
			block[0] = block[0].WithSymbol(pending)
		}
		insns = append(insns, block...)
		if len(match) == 0 {
			// Every device: nothing after it could run (the verifier
			// refuses unreachable code).
			return insns
		}
		pending = next
	}
	last := asm.Mov.Imm32(asm.R0, 0)
	if pending != "" {
		last = last.WithSymbol(pending)
	}
	return append(insns, last, asm.Return())
}

// accessMask is the BPF_DEVCG_ACC_* bits of an "rwm" access string; an
// empty one is all three, as in v1.
func accessMask(access string) int32 {
	if access == "" {
		access = "rwm"
	}
	var m int32
	for c, bit := range map[rune]int32{'m': devcgMknod, 'r': devcgRead, 'w': devcgWrite} {
		if strings.ContainsRune(access, c) {
			m |= bit
		}
	}
	return m
}

// attachDeviceProgram loads the program for rules and attaches it to the
// v2 cgroup at dir. The attachment holds the program: it lasts as long
// as the cgroup, and the descriptors here may close.
func attachDeviceProgram(dir string, rules []specs.LinuxDeviceCgroup) error {
	prog, err := ebpf.NewProgram(&ebpf.ProgramSpec{
		Name:         "moat_devices",
		Type:         ebpf.CGroupDevice,
		Instructions: deviceProgram(rules),
		License:      "",
	})
	if err != nil {
		return fmt.Errorf("cgroups: load the device program: %w", err)
	}
	defer prog.Close()
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("cgroups: %w", err)
	}
	defer unix.Close(fd)
	if err := link.RawAttachProgram(link.RawAttachProgramOptions{
		Target:  fd,
		Program: prog,
		Attach:  ebpf.AttachCGroupDevice,
		Flags:   unix.BPF_F_ALLOW_MULTI,
	}); err != nil {
		return fmt.Errorf("cgroups: attach the device program to %s: %w", dir, err)
	}
	return nil
}
