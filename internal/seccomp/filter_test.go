package seccomp

import (
	"math/rand"
	"testing"

	"golang.org/x/sys/unix"
)

// holds is what libseccomp's comparisons mean, as plain Go.
func holds(c Cond, args [6]uint64) bool {
	a := args[c.Arg]
	switch c.Op {
	case OpEQ:
		return a == c.Value
	case OpNE:
		return a != c.Value
	case OpLT:
		return a < c.Value
	case OpLE:
		return a <= c.Value
	case OpGE:
		return a >= c.Value
	case OpGT:
		return a > c.Value
	}
	return a&c.Mask == c.Value
}

// edgy returns values near v: equal, one off each way in each word.
func edgy(r *rand.Rand, v uint64) uint64 {
	switch r.Intn(7) {
	case 0:
		return v
	case 1:
		return v + 1
	case 2:
		return v - 1
	case 3:
		return v + 1<<32
	case 4:
		return v - 1<<32
	case 5:
		return v ^ uint64(r.Uint32())
	}
	return r.Uint64()
}

// TestCompiledConditionsCompareAllSixtyFourBits compiles every operator
// with random values and checks the program's answers against holds, on
// arguments that differ from the value in either word.
func TestCompiledConditionsCompareAllSixtyFourBits(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	for op := OpEQ; op <= OpMaskedEQ; op++ {
		for range 50 {
			c := Cond{Arg: r.Intn(6), Op: op, Value: r.Uint64()}
			if r.Intn(2) == 0 {
				c.Value = uint64(r.Uint32()) // a high word of zero
			}
			if op == OpMaskedEQ {
				c.Mask = r.Uint64()
				c.Value &= c.Mask
			}
			f := Filter{Rules: map[uint32][]Rule{7: {Allow(c)}}, Default: Errno(unix.EPERM)}
			prog, err := f.Compile()
			if err != nil {
				t.Fatal(err)
			}
			for range 40 {
				var args [6]uint64
				for i := range args {
					args[i] = edgy(r, c.Value)
				}
				want := uint32(Errno(unix.EPERM))
				if holds(c, args) {
					want = ActAllow
				}
				if got := Run(prog, &Data{Nr: 7, Arch: ArchX86_64, Args: args}); got != want {
					t.Fatalf("%+v on %#x: %#x, want %#x", c, args[c.Arg], got, want)
				}
			}
		}
	}
}

// TestFirstMatchingRuleDecides pins the rule order: rules of one call are
// tried in order, their conditions all must hold, and a call with no
// matching rule gets the default.
func TestFirstMatchingRuleDecides(t *testing.T) {
	f := Filter{Default: ActKillProcess, Rules: map[uint32][]Rule{
		unix.SYS_FCNTL: {
			{Conds: []Cond{Eq(1, unix.F_GETFL)}, Action: ActAllow},
			{Conds: []Cond{Eq(1, unix.F_SETFL), MaskedEq(2, unix.O_APPEND, 0)}, Action: ActAllow},
			{Conds: []Cond{Eq(1, unix.F_SETFL)}, Action: Errno(unix.EPERM)},
		},
	}}
	prog, err := f.Compile()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		cmd, arg uint64
		want     uint32
	}{
		{unix.F_GETFL, 0, ActAllow},
		{unix.F_SETFL, unix.O_NONBLOCK, ActAllow},
		{unix.F_SETFL, unix.O_APPEND, Errno(unix.EPERM)},
		{unix.F_DUPFD, 0, ActKillProcess},
	} {
		d := Data{Nr: unix.SYS_FCNTL, Arch: ArchX86_64, Args: [6]uint64{3, c.cmd, c.arg}}
		if got := Run(prog, &d); got != c.want {
			t.Errorf("fcntl(3, %d, %#x): %#x, want %#x", c.cmd, c.arg, got, c.want)
		}
	}
}

// TestOtherCallingConventionsGetTheirOwnAnswers: a 32-bit call is judged
// by its architecture before its number, an x32 call by its number's bit.
func TestOtherCallingConventionsGetTheirOwnAnswers(t *testing.T) {
	f := Filter{Default: ActAllow, BadArch: ActKillProcess, X32: Errno(unix.ENOSYS),
		Rules: map[uint32][]Rule{unix.SYS_READ: {Allow()}}}
	prog, err := f.Compile()
	if err != nil {
		t.Fatal(err)
	}
	if got := Run(prog, &Data{Nr: unix.SYS_READ, Arch: unix.AUDIT_ARCH_I386}); got != ActKillProcess {
		t.Errorf("i386 call: %#x", got)
	}
	if got := Run(prog, &Data{Nr: X32Bit | unix.SYS_READ, Arch: ArchX86_64}); got != Errno(unix.ENOSYS) {
		t.Errorf("x32 call: %#x", got)
	}
}

// TestLargeFiltersReachEveryRule compiles a rule for every call number, with
// conditions, so that jumps must reach beyond 255 instructions, and checks
// every call's answer.
func TestLargeFiltersReachEveryRule(t *testing.T) {
	f := Filter{Default: ActKillProcess, Rules: map[uint32][]Rule{}}
	for nr := uint32(0); nr < 250; nr++ {
		f.Rules[nr] = []Rule{{Conds: []Cond{Eq(0, uint64(nr)), {Arg: 1, Op: OpGT, Value: 1 << 40}}, Action: Errno(unix.Errno(nr % 4096))},
			{Action: ActTrap | nr}}
	}
	prog, err := f.Compile()
	if err != nil {
		t.Fatal(err)
	}
	if len(prog) < 2*256 {
		t.Fatalf("only %d instructions: the test does not exercise far jumps", len(prog))
	}
	for nr := uint32(0); nr < 250; nr++ {
		d := Data{Nr: int32(nr), Arch: ArchX86_64, Args: [6]uint64{uint64(nr), 1<<40 + 1}}
		if got := Run(prog, &d); got != Errno(unix.Errno(nr%4096)) {
			t.Fatalf("call %d, matching: %#x", nr, got)
		}
		d.Args[1] = 1 << 40
		if got := Run(prog, &d); got != ActTrap|nr {
			t.Fatalf("call %d, second rule: %#x", nr, got)
		}
	}
	if got := Run(prog, &Data{Nr: 250, Arch: ArchX86_64}); got != ActKillProcess {
		t.Errorf("call 250: %#x", got)
	}
}
