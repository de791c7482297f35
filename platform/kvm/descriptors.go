package kvm

import "encoding/binary"

// The descriptor tables the CPU reads in the guest: the GDT's segments, the
// TSS (only its RSP0 matters: the stack an exception from user mode is
// delivered on) and the IDT's gates.

// Segment descriptors, with the accessed bit set so the CPU never writes
// the GDT.
const (
	descKernelCode = 0x00af9b000000ffff // 64-bit code, DPL 0
	descKernelData = 0x00cf93000000ffff
	descUser32Code = 0x00cffb000000ffff // 32-bit code, DPL 3
	descUserData   = 0x00cff3000000ffff
	descUserCode   = 0x00affb000000ffff // 64-bit code, DPL 3
)

// Event vectors and the port the syscall entry writes.
const (
	numVectors  = 32
	syscallPort = 0x80
	// vectorStride is the distance between two vectors' handlers.
	vectorStride = 8
)

// tssSize is the 64-bit TSS's size; its I/O map base points past the limit,
// so user mode has no port at all.
const tssSize = 104

// writeGDT fills a vCPU's GDT, whose TSS descriptor names tssVA.
func writeGDT(b []byte, tssVA uint64) {
	le := binary.LittleEndian
	le.PutUint64(b[kernelCS:], descKernelCode)
	le.PutUint64(b[kernelDS:], descKernelData)
	le.PutUint64(b[user32CS&^3:], descUser32Code)
	le.PutUint64(b[userDS&^3:], descUserData)
	le.PutUint64(b[userCS&^3:], descUserCode)
	lo, hi := tssDescriptor(tssVA)
	le.PutUint64(b[tssSel:], lo)
	le.PutUint64(b[tssSel+8:], hi)
}

// tssDescriptor returns the two words of an available 64-bit TSS's system
// descriptor.
func tssDescriptor(base uint64) (lo, hi uint64) {
	const limit = tssSize - 1
	lo = limit | (base&0xffffff)<<16 | 0x89<<40 | (base>>24&0xff)<<56
	return lo, base >> 32
}

// writeTSS fills a TSS whose RSP0 is rsp0.
func writeTSS(b []byte, rsp0 uint64) {
	clear(b[:tssSize])
	binary.LittleEndian.PutUint64(b[4:], rsp0)
	binary.LittleEndian.PutUint16(b[102:], tssSize) // no I/O permission map
}

// idtGate returns the two words of a 64-bit interrupt gate to handler in
// the kernel code segment, callable with INT n from privilege dpl.
func idtGate(handler uint64, dpl int) (lo, hi uint64) {
	attr := uint64(0x8e | dpl<<5) // present, interrupt gate
	lo = handler&0xffff | kernelCS<<16 | attr<<40 | (handler>>16&0xffff)<<48
	return lo, handler >> 32
}

// writeIDT fills the IDT with a gate per vector to the stub's handlers.
// INT3 (and INTO, which 64-bit code cannot encode) may come from user mode,
// as on Linux; any other INT n from user mode is a #GP.
func writeIDT(b []byte, vectorsVA uint64) {
	for v := 0; v < numVectors; v++ {
		dpl := 0
		if v == 3 || v == 4 {
			dpl = 3
		}
		lo, hi := idtGate(vectorsVA+uint64(v)*vectorStride, dpl)
		binary.LittleEndian.PutUint64(b[16*v:], lo)
		binary.LittleEndian.PutUint64(b[16*v+8:], hi)
	}
}

// segment returns the kvm_segment of a flat code or data segment of the
// given selector, as the GDT describes it.
func segment(sel uint16, code bool) kvmSegment {
	s := kvmSegment{Limit: 0xffffffff, Selector: sel, Present: 1, S: 1, G: 1, DPL: uint8(sel & 3)}
	if code {
		s.Type = 11 // execute/read, accessed
		s.L = 1
	} else {
		s.Type = 3 // read/write, accessed
		s.DB = 1
	}
	return s
}
