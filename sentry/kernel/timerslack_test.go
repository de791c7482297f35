package kernel_test

import (
	"testing"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/platform/fake"
)

func timerSlack(g *fake.Guest) uintptr {
	r, _ := g.Call(unix.SYS_PRCTL, unix.PR_GET_TIMERSLACK)
	return r
}

func TestTimerSlackZeroRestoresTheSlackTheTaskWasCreatedWith(t *testing.T) {
	runInit(t, newSandbox(t), func(g *fake.Guest) {
		if s := timerSlack(g); s != 50000 {
			t.Errorf("init's timer slack = %d, want Linux's default 50000", s)
		}
		g.Call(unix.SYS_PRCTL, unix.PR_SET_TIMERSLACK, 5000000)
		check := func(g *fake.Guest, who string) {
			if s := timerSlack(g); s != 5000000 {
				t.Errorf("a new %s's timer slack = %d, want its creator's 5000000", who, s)
			}
			g.Call(unix.SYS_PRCTL, unix.PR_SET_TIMERSLACK, 0)
			if s := timerSlack(g); s != 5000000 {
				t.Errorf("a %s's timer slack after PR_SET_TIMERSLACK 0 = %d, want its creator's 5000000", who, s)
			}
		}
		_, tidAddr, _ := g.Thread(func(g *fake.Guest) { check(g, "thread") })
		g.Join(tidAddr)
		waitExit(t, g, fork(t, g, func(g *fake.Guest) { check(g, "child") }), 0)
		g.Call(unix.SYS_PRCTL, unix.PR_SET_TIMERSLACK, 0)
		if s := timerSlack(g); s != 50000 {
			t.Errorf("init's timer slack after PR_SET_TIMERSLACK 0 = %d, want 50000", s)
		}
	})
}
