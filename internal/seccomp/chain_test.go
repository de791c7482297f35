package seccomp

import (
	"math/rand"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// only returns a program that answers ret to the probe call and allows
// everything else.
func only(ret uint32) []Insn {
	return []Insn{Stmt(LdAbsW, OffNr), Jump(JeqK, probeNr, 0, 1), Stmt(RetK, ret), allowAll}
}

// TestChainPrecedenceIsLinuxs stacks two filters in the host kernel and in
// a Chain and requires the same outcome of the probe call.
func TestChainPrecedenceIsLinuxs(t *testing.T) {
	for _, c := range []struct {
		name         string
		older, newer uint32
		native       string // the probe's raw return, or "SIGSYS" for a kill
		chain        uint32 // what Evaluate answers
	}{
		{"of two errnos the newer filter's", Errno(5), Errno(7), "-7", Errno(7)},
		{"errno over log", Errno(7), ActLog, "-7", Errno(7)},
		{"errno over allow", ActAllow, Errno(9), "-9", Errno(9)},
		{"errno over trace", Errno(3), ActTrace | 1, "-3", Errno(3)},
		{"trace over log, and without a tracer ENOSYS", ActTrace | 1, ActLog, "-38", ActTrace | 1},
		{"user notification without a listener is ENOSYS", ActAllow, ActUserNotif, "-38", ActUserNotif},
		{"errno data above 4095 is 4095", Errno(0) | 0xffff, ActAllow, "-4095", Errno(0) | 0xffff},
		{"kill process over kill thread", ActKillProcess, ActKillThread, "SIGSYS", ActKillProcess},
		{"kill process over errno", Errno(1), ActKillProcess, "SIGSYS", ActKillProcess},
	} {
		lines, ps := nativeRun(t, [][]Insn{only(c.older), only(c.newer)}, [][6]uint64{{}})
		got := strings.Join(lines[min(2, len(lines)):], "")
		if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() && ws.Signal() == unix.SIGSYS {
			got = "SIGSYS"
		}
		if got != c.native {
			t.Errorf("%s: Linux gives %q, want %q", c.name, got, c.native)
		}
		chain, _ := (*Chain)(nil).Push(only(c.older))
		chain, _ = chain.Push(only(c.newer))
		if ret := chain.Evaluate(&Data{Nr: probeNr, Arch: ArchX86_64}); ret != c.chain {
			t.Errorf("%s: Chain gives %#x, want %#x", c.name, ret, c.chain)
		}
	}
}

// TestChainAnswersFromItsTableAsItsProgramsWould compares Evaluate (which
// answers calls whose fate depends on the number alone from a table made at
// Push) with running every program, for random filters of both kinds.
func TestChainAnswersFromItsTableAsItsProgramsWould(t *testing.T) {
	r := rand.New(rand.NewSource(2))
	actions := []uint32{ActAllow, ActLog, Errno(1), Errno(13), ActTrap, ActKillThread, ActKillProcess, ActTrace}
	var chain *Chain
	for range 5 {
		f := Filter{Default: actions[r.Intn(len(actions))], Rules: map[uint32][]Rule{}}
		for range 60 {
			nr := uint32(r.Intn(cachedCalls + 20))
			rule := Rule{Action: actions[r.Intn(len(actions))]}
			if r.Intn(3) == 0 {
				rule.Conds = []Cond{Eq(r.Intn(2), uint64(r.Intn(3)))}
			}
			if nr < X32Bit {
				f.Rules[nr] = append(f.Rules[nr], rule)
			}
		}
		prog, err := f.Compile()
		if err != nil {
			t.Fatal(err)
		}
		var ok bool
		if chain, ok = chain.Push(prog); !ok {
			t.Fatal("Push refused a short chain")
		}
		for range 2000 {
			d := Data{Nr: int32(r.Intn(cachedCalls + 20)), Arch: ArchX86_64, Args: [6]uint64{uint64(r.Intn(3)), uint64(r.Intn(3))}}
			want := uint32(ActAllow)
			for c := chain; c != nil; c = c.prev {
				if ret := Run(c.prog, &d); Precedes(ret, want) {
					want = ret
				}
			}
			if got := chain.Evaluate(&d); got != want {
				t.Fatalf("call %d %v: Evaluate %#x, programs %#x", d.Nr, d.Args[:2], got, want)
			}
		}
	}
}

// TestChainLengthIsBoundedAsOnLinux: each filter counts its length plus
// four, up to 32768.
func TestChainLengthIsBoundedAsOnLinux(t *testing.T) {
	long := append(repeat(Stmt(LdAbsW, 0), MaxInsns-1), allowAll)
	var chain *Chain
	n := 0
	for ; ; n++ {
		next, ok := chain.Push(long)
		if !ok {
			break
		}
		chain = next
	}
	lines, _ := nativeRun(t, [][]Insn{long, long, long, long, long, long, long, long}, nil)
	native := 0
	for native < len(lines) && lines[native] == "ok" {
		native++
	}
	if native != n || len(lines) <= native || lines[native] != "12" {
		t.Errorf("Chain takes %d filters of %d instructions; Linux %q (wants ENOMEM, 12, after)", n, MaxInsns, lines)
	}
}
