package seccomp

import "golang.org/x/sys/unix"

// Run executes a program that passed Check on d and returns what it
// returns. Arithmetic is 32-bit and wraps; a division by an X of zero ends
// the program with 0 (SECCOMP_RET_KILL_THREAD), as Linux's does. A shift by
// X uses X's low five bits, as the x86-64 JIT that runs seccomp programs
// on the host does.
func Run(prog []Insn, d *Data) uint32 {
	ret, _ := run(prog, d, false)
	return ret
}

// run is Run; with nrOnly, it gives up (false) as soon as the program
// loads anything but the number and the architecture.
func run(prog []Insn, d *Data, nrOnly bool) (uint32, bool) {
	var a, x uint32
	var mem [memWords]uint32
	for pc := 0; pc < len(prog); pc++ {
		in := &prog[pc]
		switch in.Code {
		case LdAbsW:
			if nrOnly && in.K >= OffIP {
				return 0, false
			}
			a = d.word(in.K)
		case unix.BPF_LD | unix.BPF_W | unix.BPF_LEN:
			a = DataSize
		case unix.BPF_LDX | unix.BPF_W | unix.BPF_LEN:
			x = DataSize
		case unix.BPF_LD | unix.BPF_IMM:
			a = in.K
		case unix.BPF_LDX | unix.BPF_IMM:
			x = in.K
		case unix.BPF_LD | unix.BPF_MEM:
			a = mem[in.K]
		case unix.BPF_LDX | unix.BPF_MEM:
			x = mem[in.K]
		case unix.BPF_ST:
			mem[in.K] = a
		case unix.BPF_STX:
			mem[in.K] = x
		case unix.BPF_MISC | unix.BPF_TAX:
			x = a
		case unix.BPF_MISC | unix.BPF_TXA:
			a = x
		case unix.BPF_ALU | unix.BPF_NEG:
			a = -a
		case RetK:
			return in.K, true
		case RetA:
			return a, true
		case Ja:
			pc += int(in.K)
		default:
			operand := in.K
			if in.Code&unix.BPF_X != 0 {
				operand = x
			}
			if in.Code&0x07 == unix.BPF_JMP {
				if jumpTaken(in.Code&0xf0, a, operand) {
					pc += int(in.Jt)
				} else {
					pc += int(in.Jf)
				}
				continue
			}
			var ok bool
			if a, ok = alu(in.Code&0xf0, a, operand); !ok {
				return 0, true
			}
		}
	}
	return 0, true // unreachable after Check: the last instruction returns
}

func jumpTaken(op uint16, a, v uint32) bool {
	switch op {
	case unix.BPF_JEQ:
		return a == v
	case unix.BPF_JGT:
		return a > v
	case unix.BPF_JGE:
		return a >= v
	}
	return a&v != 0 // BPF_JSET
}

// alu applies op; false for a division by zero.
func alu(op uint16, a, v uint32) (uint32, bool) {
	switch op {
	case unix.BPF_ADD:
		return a + v, true
	case unix.BPF_SUB:
		return a - v, true
	case unix.BPF_MUL:
		return a * v, true
	case unix.BPF_DIV:
		if v == 0 {
			return 0, false
		}
		return a / v, true
	case unix.BPF_AND:
		return a & v, true
	case unix.BPF_OR:
		return a | v, true
	case unix.BPF_XOR:
		return a ^ v, true
	case unix.BPF_LSH:
		return a << (v & 31), true
	}
	return a >> (v & 31), true // BPF_RSH
}
