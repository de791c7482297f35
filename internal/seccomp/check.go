package seccomp

import "golang.org/x/sys/unix"

// MaxInsns is the longest program Linux accepts (BPF_MAXINSNS).
const MaxInsns = unix.BPF_MAXINSNS

// memWords is the number of scratch memory slots (BPF_MEMWORDS).
const memWords = unix.BPF_MEMWORDS

// allowed are the instructions seccomp accepts (Linux's
// seccomp_check_filter): no packet loads but whole words of seccomp_data,
// no modulo, no indirect loads, no extensions.
var allowed = map[uint16]bool{
	unix.BPF_RET | unix.BPF_K: true, unix.BPF_RET | unix.BPF_A: true,
	unix.BPF_ALU | unix.BPF_ADD | unix.BPF_K: true, unix.BPF_ALU | unix.BPF_ADD | unix.BPF_X: true,
	unix.BPF_ALU | unix.BPF_SUB | unix.BPF_K: true, unix.BPF_ALU | unix.BPF_SUB | unix.BPF_X: true,
	unix.BPF_ALU | unix.BPF_MUL | unix.BPF_K: true, unix.BPF_ALU | unix.BPF_MUL | unix.BPF_X: true,
	unix.BPF_ALU | unix.BPF_DIV | unix.BPF_K: true, unix.BPF_ALU | unix.BPF_DIV | unix.BPF_X: true,
	unix.BPF_ALU | unix.BPF_AND | unix.BPF_K: true, unix.BPF_ALU | unix.BPF_AND | unix.BPF_X: true,
	unix.BPF_ALU | unix.BPF_OR | unix.BPF_K: true, unix.BPF_ALU | unix.BPF_OR | unix.BPF_X: true,
	unix.BPF_ALU | unix.BPF_XOR | unix.BPF_K: true, unix.BPF_ALU | unix.BPF_XOR | unix.BPF_X: true,
	unix.BPF_ALU | unix.BPF_LSH | unix.BPF_K: true, unix.BPF_ALU | unix.BPF_LSH | unix.BPF_X: true,
	unix.BPF_ALU | unix.BPF_RSH | unix.BPF_K: true, unix.BPF_ALU | unix.BPF_RSH | unix.BPF_X: true,
	unix.BPF_ALU | unix.BPF_NEG: true,
	unix.BPF_LD | unix.BPF_IMM:  true, unix.BPF_LDX | unix.BPF_IMM: true,
	unix.BPF_MISC | unix.BPF_TAX: true, unix.BPF_MISC | unix.BPF_TXA: true,
	unix.BPF_LD | unix.BPF_MEM: true, unix.BPF_LDX | unix.BPF_MEM: true,
	unix.BPF_ST: true, unix.BPF_STX: true,
	unix.BPF_JMP | unix.BPF_JA:               true,
	unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K: true, unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_X: true,
	unix.BPF_JMP | unix.BPF_JGE | unix.BPF_K: true, unix.BPF_JMP | unix.BPF_JGE | unix.BPF_X: true,
	unix.BPF_JMP | unix.BPF_JGT | unix.BPF_K: true, unix.BPF_JMP | unix.BPF_JGT | unix.BPF_X: true,
	unix.BPF_JMP | unix.BPF_JSET | unix.BPF_K: true, unix.BPF_JMP | unix.BPF_JSET | unix.BPF_X: true,
	// Loads of seccomp_data, and of its length.
	LdAbsW: true, unix.BPF_LD | unix.BPF_W | unix.BPF_LEN: true, unix.BPF_LDX | unix.BPF_W | unix.BPF_LEN: true,
}

// Check applies the rules Linux applies to a program given to seccomp(2)
// (bpf_check_classic, then seccomp_check_filter) and returns EINVAL where
// Linux does: an empty or too long program, an instruction seccomp does not
// take, a load outside seccomp_data or not word-aligned, a jump past the
// end, a constant division by zero or shift by 32 or more, a scratch slot
// out of range or read before every path to it wrote it, and a last
// instruction that is not a return.
func Check(prog []Insn) error {
	n := len(prog)
	if n == 0 || n > MaxInsns {
		return unix.EINVAL
	}
	for pc, in := range prog {
		if !allowed[in.Code] {
			return unix.EINVAL
		}
		switch in.Code {
		case LdAbsW:
			if in.K >= DataSize || in.K&3 != 0 {
				return unix.EINVAL
			}
		case unix.BPF_ALU | unix.BPF_DIV | unix.BPF_K:
			if in.K == 0 {
				return unix.EINVAL
			}
		case unix.BPF_ALU | unix.BPF_LSH | unix.BPF_K, unix.BPF_ALU | unix.BPF_RSH | unix.BPF_K:
			if in.K >= 32 {
				return unix.EINVAL
			}
		case unix.BPF_LD | unix.BPF_MEM, unix.BPF_LDX | unix.BPF_MEM, unix.BPF_ST, unix.BPF_STX:
			if in.K >= memWords {
				return unix.EINVAL
			}
		case Ja:
			if uint64(in.K) >= uint64(n-pc-1) {
				return unix.EINVAL
			}
		default:
			if in.Code&0x07 == unix.BPF_JMP && (pc+int(in.Jt)+1 >= n || pc+int(in.Jf)+1 >= n) {
				return unix.EINVAL
			}
		}
	}
	if c := prog[n-1].Code; c != RetK && c != RetA {
		return unix.EINVAL
	}
	return checkLoadsAfterStores(prog)
}

// checkLoadsAfterStores rejects a program that may read a scratch slot no
// store has written on the way there. Jumps only go forward, so one pass
// carries what is written along every edge (Linux's check_load_and_stores).
func checkLoadsAfterStores(prog []Insn) error {
	in := make([]uint16, len(prog)) // slots written on every path into pc
	for i := range in {
		in[i] = 0xffff
	}
	in[0] = 0
	var valid uint16
	for pc, ins := range prog {
		valid &= in[pc]
		switch ins.Code {
		case unix.BPF_ST, unix.BPF_STX:
			valid |= 1 << ins.K
		case unix.BPF_LD | unix.BPF_MEM, unix.BPF_LDX | unix.BPF_MEM:
			if valid&(1<<ins.K) == 0 {
				return unix.EINVAL
			}
		case Ja:
			in[pc+1+int(ins.K)] &= valid
			valid = 0xffff
		case RetK, RetA:
			valid = 0xffff
		default:
			if ins.Code&0x07 == unix.BPF_JMP {
				in[pc+1+int(ins.Jt)] &= valid
				in[pc+1+int(ins.Jf)] &= valid
				valid = 0xffff
			}
		}
	}
	return nil
}
