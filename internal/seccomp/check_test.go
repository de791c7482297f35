package seccomp

import (
	"strconv"
	"testing"

	"golang.org/x/sys/unix"
)

var allowAll = Stmt(RetK, ActAllow)

func repeat(in Insn, n int) []Insn {
	p := make([]Insn, n)
	for i := range p {
		p[i] = in
	}
	return p
}

// checkCases are programs Linux accepts or refuses, each returning ALLOW
// on every path, so that one the host accepts harms nothing after it.
var checkCases = []struct {
	name string
	prog []Insn
}{
	{"empty", nil},
	{"longest", append(repeat(Stmt(LdAbsW, 0), MaxInsns-1), allowAll)},
	{"one too long", append(repeat(Stmt(LdAbsW, 0), MaxInsns), allowAll)},
	{"halfword load", []Insn{Stmt(unix.BPF_LD|unix.BPF_H|unix.BPF_ABS, 0), allowAll}},
	{"byte load", []Insn{Stmt(unix.BPF_LD|unix.BPF_B|unix.BPF_ABS, 0), allowAll}},
	{"load at the end of seccomp_data", []Insn{Stmt(LdAbsW, 64), allowAll}},
	{"load of the last word", []Insn{Stmt(LdAbsW, 60), allowAll}},
	{"unaligned load", []Insn{Stmt(LdAbsW, 2), allowAll}},
	{"indirect load", []Insn{Stmt(unix.BPF_LD|unix.BPF_W|unix.BPF_IND, 0), allowAll}},
	{"msh load", []Insn{Stmt(unix.BPF_LDX|unix.BPF_B|unix.BPF_MSH, 0), allowAll}},
	{"length loads", []Insn{Stmt(unix.BPF_LD|unix.BPF_W|unix.BPF_LEN, 0), Stmt(unix.BPF_LDX|unix.BPF_W|unix.BPF_LEN, 0), allowAll}},
	{"modulo", []Insn{Stmt(unix.BPF_ALU|unix.BPF_MOD|unix.BPF_K, 3), allowAll}},
	{"division by constant zero", []Insn{Stmt(unix.BPF_ALU|unix.BPF_DIV|unix.BPF_K, 0), allowAll}},
	{"division by one", []Insn{Stmt(unix.BPF_ALU|unix.BPF_DIV|unix.BPF_K, 1), allowAll}},
	{"shift by 32", []Insn{Stmt(unix.BPF_ALU|unix.BPF_LSH|unix.BPF_K, 32), allowAll}},
	{"shift by 31", []Insn{Stmt(unix.BPF_ALU|unix.BPF_RSH|unix.BPF_K, 31), allowAll}},
	{"scratch slot 16", []Insn{Stmt(unix.BPF_ST, 16), allowAll}},
	{"load of an unwritten slot", []Insn{Stmt(unix.BPF_LD|unix.BPF_MEM, 0), allowAll}},
	{"store then load", []Insn{Stmt(unix.BPF_ST, 15), Stmt(unix.BPF_LDX|unix.BPF_MEM, 15), allowAll}},
	{"slot written on one path only", []Insn{
		Stmt(LdAbsW, 0), Jump(JeqK, 1, 0, 1), Stmt(unix.BPF_ST, 2), Stmt(unix.BPF_LD|unix.BPF_MEM, 2), allowAll}},
	{"slot written on both paths", []Insn{
		Stmt(LdAbsW, 0), Jump(JeqK, 1, 0, 2), Stmt(unix.BPF_ST, 2), Stmt(Ja, 1), Stmt(unix.BPF_STX, 2),
		Stmt(unix.BPF_LD|unix.BPF_MEM, 2), allowAll}},
	{"jump to the last instruction", []Insn{Stmt(Ja, 0), allowAll}},
	{"jump past the end", []Insn{Stmt(Ja, 1), allowAll}},
	{"conditional jump past the end", []Insn{Jump(JeqK, 0, 1, 0), allowAll}},
	{"no return at the end", []Insn{allowAll, Stmt(LdAbsW, 0)}},
	{"return of A", []Insn{Stmt(unix.BPF_LD|unix.BPF_IMM, ActAllow), Stmt(RetA, 0)}},
	{"unknown instruction", []Insn{Stmt(0xffff, 0), allowAll}},
	{"every arithmetic operation", []Insn{
		Stmt(unix.BPF_LDX|unix.BPF_IMM, 1), Stmt(unix.BPF_ALU|unix.BPF_ADD|unix.BPF_X, 0), Stmt(unix.BPF_ALU|unix.BPF_SUB|unix.BPF_K, 1),
		Stmt(unix.BPF_ALU|unix.BPF_MUL|unix.BPF_X, 0), Stmt(unix.BPF_ALU|unix.BPF_DIV|unix.BPF_X, 0),
		Stmt(unix.BPF_ALU|unix.BPF_OR|unix.BPF_X, 0), Stmt(unix.BPF_ALU|unix.BPF_XOR|unix.BPF_K, 1),
		Stmt(unix.BPF_ALU|unix.BPF_LSH|unix.BPF_X, 0), Stmt(unix.BPF_ALU|unix.BPF_NEG, 0),
		Stmt(unix.BPF_MISC|unix.BPF_TAX, 0), Stmt(unix.BPF_MISC|unix.BPF_TXA, 0), allowAll}},
	// (A division by an X of zero would end the program with KILL_THREAD.)
}

// TestCheckAcceptsWhatLinuxAccepts loads every case into the host kernel
// and requires Check to give the kernel's verdict.
func TestCheckAcceptsWhatLinuxAccepts(t *testing.T) {
	progs := make([][]Insn, len(checkCases))
	for i, c := range checkCases {
		progs[i] = c.prog
	}
	lines, _ := nativeRun(t, progs, nil)
	if len(lines) != len(checkCases) {
		t.Fatalf("the helper answered %q", lines)
	}
	for i, c := range checkCases {
		want := "ok"
		if err := Check(c.prog); err != nil {
			want = strconv.Itoa(int(err.(unix.Errno)))
		}
		if lines[i] != want {
			t.Errorf("%s: Linux says %s, Check %s", c.name, lines[i], want)
		}
	}
}
