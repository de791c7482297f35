package seccomp

import (
	"encoding/binary"
	"fmt"

	"golang.org/x/sys/unix"
)

// Insn is one classic BPF instruction (struct sock_filter).
type Insn struct {
	Code   uint16
	Jt, Jf uint8
	K      uint32
}

// InsnSize is the size of a struct sock_filter.
const InsnSize = 8

// Stmt is an instruction without jumps.
func Stmt(code uint16, k uint32) Insn { return Insn{Code: code, K: k} }

// Jump is a conditional jump: jt and jf instructions forward from the next.
func Jump(code uint16, k uint32, jt, jf uint8) Insn { return Insn{Code: code, Jt: jt, Jf: jf, K: k} }

// Instruction codes the compiler and tests use.
const (
	LdAbsW = unix.BPF_LD | unix.BPF_W | unix.BPF_ABS
	JeqK   = unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K
	JgtK   = unix.BPF_JMP | unix.BPF_JGT | unix.BPF_K
	JgeK   = unix.BPF_JMP | unix.BPF_JGE | unix.BPF_K
	JsetK  = unix.BPF_JMP | unix.BPF_JSET | unix.BPF_K
	Ja     = unix.BPF_JMP | unix.BPF_JA
	AndK   = unix.BPF_ALU | unix.BPF_AND | unix.BPF_K
	RetK   = unix.BPF_RET | unix.BPF_K
	RetA   = unix.BPF_RET | unix.BPF_A
)

// Encode returns prog as the bytes of a sock_filter array.
func Encode(prog []Insn) []byte {
	b := make([]byte, len(prog)*InsnSize)
	for i, in := range prog {
		o := b[i*InsnSize:]
		binary.LittleEndian.PutUint16(o[0:], in.Code)
		o[2], o[3] = in.Jt, in.Jf
		binary.LittleEndian.PutUint32(o[4:], in.K)
	}
	return b
}

// Decode reads a sock_filter array.
func Decode(b []byte) ([]Insn, error) {
	if len(b)%InsnSize != 0 {
		return nil, fmt.Errorf("seccomp: %d bytes is not a whole number of instructions", len(b))
	}
	prog := make([]Insn, len(b)/InsnSize)
	for i := range prog {
		o := b[i*InsnSize:]
		prog[i] = Insn{Code: binary.LittleEndian.Uint16(o[0:]), Jt: o[2], Jf: o[3], K: binary.LittleEndian.Uint32(o[4:])}
	}
	return prog, nil
}
