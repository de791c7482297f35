package seccomp

import "golang.org/x/sys/unix"

// Data is what a filter examines (struct seccomp_data): the call's number,
// the calling convention's audit architecture, the address after the
// system call instruction and the six arguments.
type Data struct {
	Nr   int32
	Arch uint32
	IP   uint64
	Args [6]uint64
}

// DataSize is sizeof(struct seccomp_data): loads must lie within it.
const DataSize = 64

// Offsets of struct seccomp_data's fields, for programs.
const (
	OffNr   = 0
	OffArch = 4
	OffIP   = 8
	OffArgs = 16
)

// ArchX86_64 is the only architecture moat's sentry runs guest calls for.
const ArchX86_64 = unix.AUDIT_ARCH_X86_64

// X32Bit marks an x32 call's number on x86-64 (__X32_SYSCALL_BIT).
const X32Bit = 0x40000000

// word is the 32-bit word of d at offset off, which Check proved aligned
// and within DataSize; the machine is little-endian, so an argument's low
// half comes first.
func (d *Data) word(off uint32) uint32 {
	switch {
	case off == OffNr:
		return uint32(d.Nr)
	case off == OffArch:
		return d.Arch
	case off < OffArgs:
		return half(d.IP, off-OffIP)
	}
	off -= OffArgs
	return half(d.Args[off/8], off%8)
}

func half(v uint64, off uint32) uint32 {
	if off != 0 {
		return uint32(v >> 32)
	}
	return uint32(v)
}
