package syscalls

import (
	"sync"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/internal/linuxabi"
	"github.com/moat-sandbox/moat/platform/fake"
	"github.com/moat-sandbox/moat/sentry/kernel/kerneltest"
)

func TestPersonalityIsKeptAcrossForkAndExecAndQueriedWithoutChange(t *testing.T) {
	s := kerneltest.New(t, NewTable())
	var mu sync.Mutex
	var seen []uintptr
	s.AddProgram("/bin/report", func(g *fake.Guest) {
		p, _ := g.Call(unix.SYS_PERSONALITY, linuxabi.PER_QUERY)
		mu.Lock()
		seen = append(seen, p)
		mu.Unlock()
	})
	runIn(t, s, func(g *fake.Guest) {
		p, errno := g.Call(unix.SYS_PERSONALITY, linuxabi.PER_QUERY)
		expectRet(t, "personality(PER_QUERY) at first", p, errno, 0, 0)
		p, errno = g.Call(unix.SYS_PERSONALITY, linuxabi.ADDR_NO_RANDOMIZE)
		expectRet(t, "personality(ADDR_NO_RANDOMIZE)", p, errno, 0, 0)
		child, _ := g.Fork(func(g *fake.Guest) {
			g.Call(unix.SYS_EXECVE, g.CString("/bin/report"), g.CStrings([]string{"report"}), 0)
		})
		g.Wait(child, 0)
		p, errno = g.Call(unix.SYS_PERSONALITY, linuxabi.PER_QUERY)
		expectRet(t, "personality(PER_QUERY) after setting", p, errno, linuxabi.ADDR_NO_RANDOMIZE, 0)
	})
	if len(seen) != 1 || seen[0] != linuxabi.ADDR_NO_RANDOMIZE {
		t.Errorf("the forked and exec'd child's persona: %#x, want [%#x]", seen, linuxabi.ADDR_NO_RANDOMIZE)
	}
}

func TestAddrNoRandomizeGivesEachExecTheSameStack(t *testing.T) {
	s := kerneltest.New(t, NewTable())
	var mu sync.Mutex
	var stacks []uint64
	s.AddProgram("/bin/report", func(g *fake.Guest) {
		mu.Lock()
		stacks = append(stacks, g.Regs().Rsp)
		mu.Unlock()
	})
	execTwice := func(g *fake.Guest) {
		for i := 0; i < 2; i++ {
			child, _ := g.Fork(func(g *fake.Guest) {
				g.Call(unix.SYS_EXECVE, g.CString("/bin/report"), g.CStrings([]string{"report"}), 0)
			})
			g.Wait(child, 0)
		}
	}
	runIn(t, s, func(g *fake.Guest) {
		execTwice(g)
		g.Call(unix.SYS_PERSONALITY, linuxabi.ADDR_NO_RANDOMIZE)
		execTwice(g)
	})
	if len(stacks) != 4 {
		t.Fatalf("%d programs ran, want 4", len(stacks))
	}
	if stacks[0] == stacks[1] {
		t.Errorf("two execs without ADDR_NO_RANDOMIZE share the stack %#x: the layout is not random", stacks[0])
	}
	if stacks[2] != stacks[3] {
		t.Errorf("two execs with ADDR_NO_RANDOMIZE have stacks %#x and %#x, want one address", stacks[2], stacks[3])
	}
}
