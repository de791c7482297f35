package seccomp

import (
	"fmt"
	"slices"
)

// Filter is a seccomp policy as tables: what each system call of x86-64
// gets, by rules tried in order, and what everything else gets. Compile
// turns it into a program.
type Filter struct {
	// Rules are each call's rules by number, tried in order: the first
	// whose conditions all hold gives the call its return value.
	Rules map[uint32][]Rule
	// Default is the return value of a call no rule matches.
	Default uint32
	// BadArch is the return value of a call made with another calling
	// convention (a 32-bit int $0x80), X32 that of an x32 call (number
	// with X32Bit set).
	BadArch, X32 uint32
}

// Rule gives Action to a call when every condition holds (always, with
// none).
type Rule struct {
	Conds  []Cond
	Action uint32
}

// Op compares a 64-bit argument with a value, unsigned, as libseccomp's
// SCMP_CMP_* do.
type Op int

const (
	OpEQ Op = iota
	OpNE
	OpLT
	OpLE
	OpGE
	OpGT
	OpMaskedEQ // arg & Mask == Value
)

// Cond is a condition on argument Arg (0 to 5).
type Cond struct {
	Arg   int
	Op    Op
	Value uint64
	Mask  uint64 // OpMaskedEQ only
}

// Allow, Eq and MaskedEq build the conditions and rules allowlists use.
func Eq(arg int, v uint64) Cond { return Cond{Arg: arg, Op: OpEQ, Value: v} }
func MaskedEq(arg int, mask, v uint64) Cond {
	return Cond{Arg: arg, Op: OpMaskedEQ, Mask: mask, Value: v}
}
func Allow(conds ...Cond) Rule { return Rule{Conds: conds, Action: ActAllow} }

// Compile returns the program of f: a check of the architecture, then a
// binary search on the call's number (a handful of comparisons however
// many calls have rules), then the call's rules.
func (f *Filter) Compile() ([]Insn, error) {
	nrs := make([]uint32, 0, len(f.Rules))
	for nr, rules := range f.Rules {
		if nr >= X32Bit {
			return nil, fmt.Errorf("seccomp: call number %#x is not an x86-64 call", nr)
		}
		for _, r := range rules {
			for _, c := range r.Conds {
				if c.Arg < 0 || c.Arg > 5 || c.Op < OpEQ || c.Op > OpMaskedEQ {
					return nil, fmt.Errorf("seccomp: call %d: bad condition %+v", nr, c)
				}
			}
		}
		nrs = append(nrs, nr)
	}
	slices.Sort(nrs)
	var a assembler
	lDefault, lBadArch, lX32 := a.newLabel(), a.newLabel(), a.newLabel()
	a.emit(Stmt(LdAbsW, OffArch))
	a.jump(JeqK, ArchX86_64, next, lBadArch)
	a.emit(Stmt(LdAbsW, OffNr))
	a.jump(JgeK, X32Bit, lX32, next)
	blocks := make([]label, len(nrs))
	for i := range blocks {
		blocks[i] = a.newLabel()
	}
	a.search(nrs, blocks, lDefault)
	for i, nr := range nrs {
		a.bind(blocks[i])
		for _, r := range f.Rules[nr] {
			a.rule(r)
		}
		a.emit(Stmt(RetK, f.Default))
	}
	a.bind(lDefault)
	a.emit(Stmt(RetK, f.Default))
	a.bind(lBadArch)
	a.emit(Stmt(RetK, f.BadArch))
	a.bind(lX32)
	a.emit(Stmt(RetK, f.X32))
	prog, err := a.assemble()
	if err != nil {
		return nil, err
	}
	if err := Check(prog); err != nil {
		return nil, fmt.Errorf("seccomp: compiled program of %d instructions fails Linux's checks: %w", len(prog), err)
	}
	return prog, nil
}

// search emits a binary search of nrs (sorted, A holding the number) that
// jumps to each one's block, and to miss for any other number.
func (a *assembler) search(nrs []uint32, blocks []label, miss label) {
	if len(nrs) <= 3 {
		for i, nr := range nrs {
			a.jump(JeqK, nr, blocks[i], next)
		}
		a.jump(Ja, 0, miss, miss)
		return
	}
	mid := len(nrs) / 2
	right := a.newLabel()
	a.jump(JgeK, nrs[mid], right, next)
	a.search(nrs[:mid], blocks[:mid], miss)
	a.bind(right)
	a.search(nrs[mid:], blocks[mid:], miss)
}

// rule emits r's conditions, each jumping to the next rule when it fails,
// then r's return. The call's number is no longer in A after a condition;
// nothing after needs it.
func (a *assembler) rule(r Rule) {
	fail := a.newLabel()
	for _, c := range r.Conds {
		a.cond(c, fail)
	}
	a.emit(Stmt(RetK, r.Action))
	a.bind(fail)
}

// cond emits the 64-bit comparison c, falling through when it holds and
// jumping to fail when not: the high words decide unless they are equal.
func (a *assembler) cond(c Cond, fail label) {
	lo := uint32(OffArgs + 8*c.Arg)
	hi := lo + 4
	vlo, vhi := uint32(c.Value), uint32(c.Value>>32)
	pass := a.newLabel()
	switch c.Op {
	case OpEQ, OpNE:
		t, f := label(next), fail // EQ: equal high words go on
		if c.Op == OpNE {
			t, f = next, pass
		}
		a.emit(Stmt(LdAbsW, hi))
		a.jump(JeqK, vhi, t, f)
		a.emit(Stmt(LdAbsW, lo))
		if c.Op == OpEQ {
			a.jump(JeqK, vlo, next, fail)
		} else {
			a.jump(JeqK, vlo, fail, next)
		}
	case OpMaskedEQ:
		mlo, mhi := uint32(c.Mask), uint32(c.Mask>>32)
		if mhi != 0 || vhi != 0 {
			a.emit(Stmt(LdAbsW, hi))
			a.emit(Stmt(AndK, mhi))
			a.jump(JeqK, vhi, next, fail)
		}
		a.emit(Stmt(LdAbsW, lo))
		a.emit(Stmt(AndK, mlo))
		a.jump(JeqK, vlo, next, fail)
	default:
		// arg > v (GT) or arg >= v (GE); LT and LE are their negations.
		holds, fails := label(pass), fail
		if c.Op == OpLT || c.Op == OpLE {
			holds, fails = fail, pass
		}
		lowJump := uint16(JgtK)
		if c.Op == OpGE || c.Op == OpLT {
			lowJump = JgeK
		}
		a.emit(Stmt(LdAbsW, hi))
		a.jump(JgtK, vhi, holds, next)
		a.jump(JeqK, vhi, next, fails)
		a.emit(Stmt(LdAbsW, lo))
		a.jump(lowJump, vlo, holds, fails)
	}
	a.bind(pass)
}
