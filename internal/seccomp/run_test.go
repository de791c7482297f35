package seccomp

import (
	"fmt"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

const (
	ldX   = unix.BPF_LDX | unix.BPF_W | unix.BPF_IMM
	tax   = unix.BPF_MISC | unix.BPF_TAX
	txa   = unix.BPF_MISC | unix.BPF_TXA
	aluK  = unix.BPF_ALU
	aluX  = unix.BPF_ALU | unix.BPF_X
	argLo = OffArgs
	argHi = OffArgs + 4
)

// probe wraps body, which computes A from the probe call's arguments:
// the probe call gets ERRNO with A's low 12 bits (0 is success), every
// other call is allowed.
func probe(body ...Insn) []Insn {
	p := []Insn{Stmt(LdAbsW, OffNr), Jump(JeqK, probeNr, 1, 0), allowAll}
	p = append(p, body...)
	return append(p, Stmt(AndK, 0xfff), Stmt(aluK|unix.BPF_OR|unix.BPF_K, ActErrno), Stmt(RetA, 0))
}

// x1 loads the second argument's low word into X.
var x1 = []Insn{Stmt(LdAbsW, argLo+8), Stmt(tax, 0), Stmt(LdAbsW, argLo)}

func withX(body ...Insn) []Insn { return append(append([]Insn{}, x1...), body...) }

var runCases = []struct {
	name string
	prog []Insn
}{
	{"add wraps", probe(withX(Stmt(aluX|unix.BPF_ADD, 0))...)},
	{"sub wraps", probe(withX(Stmt(aluX|unix.BPF_SUB, 0))...)},
	{"mul wraps", probe(withX(Stmt(aluX|unix.BPF_MUL, 0))...)},
	{"div", probe(withX(Stmt(aluX|unix.BPF_DIV, 0))...)},
	{"and or xor", probe(withX(Stmt(aluX|unix.BPF_AND, 0), Stmt(aluK|unix.BPF_OR|unix.BPF_K, 0x30),
		Stmt(aluK|unix.BPF_XOR|unix.BPF_K, 0x5a5))...)},
	{"shift by X", probe(withX(Stmt(aluX|unix.BPF_LSH, 0), Stmt(aluK|unix.BPF_RSH|unix.BPF_K, 4))...)},
	{"right shift by X", probe(withX(Stmt(aluX|unix.BPF_RSH, 0))...)},
	{"neg", probe(Stmt(LdAbsW, argLo), Stmt(aluK|unix.BPF_NEG, 0))},
	{"high words", probe(Stmt(LdAbsW, argHi), Stmt(tax, 0), Stmt(LdAbsW, argHi+8), Stmt(aluX|unix.BPF_SUB, 0))},
	{"scratch memory", probe(Stmt(LdAbsW, argLo), Stmt(unix.BPF_ST, 3), Stmt(LdAbsW, argLo+8),
		Stmt(unix.BPF_STX, 4), Stmt(unix.BPF_LDX|unix.BPF_MEM, 3), Stmt(txa, 0),
		Stmt(unix.BPF_LD|unix.BPF_MEM, 4), Stmt(aluX|unix.BPF_ADD, 0))},
	{"length", probe(Stmt(unix.BPF_LD|unix.BPF_W|unix.BPF_LEN, 0), Stmt(unix.BPF_LDX|unix.BPF_W|unix.BPF_LEN, 0),
		Stmt(aluX|unix.BPF_ADD, 0))},
	{"unsigned jumps", probe(withX(
		Jump(unix.BPF_JMP|unix.BPF_JGT|unix.BPF_X, 0, 0, 2), Stmt(unix.BPF_LD|unix.BPF_IMM, 1), Stmt(Ja, 5),
		Jump(unix.BPF_JMP|unix.BPF_JGE|unix.BPF_X, 0, 0, 2), Stmt(unix.BPF_LD|unix.BPF_IMM, 2), Stmt(Ja, 2),
		Stmt(unix.BPF_LD|unix.BPF_IMM, 3), Stmt(Ja, 0))...)},
	{"jset", probe(withX(Jump(unix.BPF_JMP|unix.BPF_JSET|unix.BPF_X, 0, 0, 2),
		Stmt(unix.BPF_LD|unix.BPF_IMM, 7), Stmt(Ja, 1), Stmt(unix.BPF_LD|unix.BPF_IMM, 9))...)},
}

// runArgs are the argument vectors each case is tried with: carries,
// borrows, signs, shifts past 31 and high words.
var runArgs = [][6]uint64{
	{5, 3}, {3, 5}, {0xffffffff, 2}, {0x80000000, 0x80000000}, {0x12345678, 33}, {0xdeadbeef, 31},
	{0x1_0000_0007, 0x5_0000_0002}, {0xfff, 0xfff}, {100, 7}, {0xffff_ffff_ffff_ffff, 1},
}

// TestRunComputesWhatLinuxComputes runs every case in the host kernel and
// in Run, on every argument vector, and compares what the probe call got.
func TestRunComputesWhatLinuxComputes(t *testing.T) {
	for _, c := range runCases {
		if err := Check(c.prog); err != nil {
			t.Fatalf("%s: Check: %v", c.name, err)
		}
		lines, _ := nativeRun(t, [][]Insn{c.prog}, runArgs)
		if len(lines) != 1+len(runArgs) || lines[0] != "ok" {
			t.Fatalf("%s: the helper answered %q", c.name, lines)
		}
		for i, a := range runArgs {
			d := Data{Nr: probeNr, Arch: ArchX86_64, Args: a}
			ret := Run(c.prog, &d)
			want := fmt.Sprint(-int(RetData(ret)))
			if got := strings.TrimSpace(lines[1+i]); got != want {
				t.Errorf("%s on %#x: Linux gives %s, Run %s (returned %#x)", c.name, a[:2], got, want, ret)
			}
		}
	}
}

// TestRunEndsWithZeroOnDivisionByZero pins Linux's rule for a division by
// an X of zero: the program returns 0, KILL_THREAD (not run natively: it
// would kill the helper's thread, which the Go runtime does not survive).
func TestRunEndsWithZeroOnDivisionByZero(t *testing.T) {
	prog := []Insn{Stmt(ldX, 0), Stmt(unix.BPF_LD|unix.BPF_IMM, 10), Stmt(aluX|unix.BPF_DIV, 0), allowAll}
	if err := Check(prog); err != nil {
		t.Fatal(err)
	}
	if got := Run(prog, &Data{}); got != ActKillThread {
		t.Errorf("Run = %#x, want 0", got)
	}
}
