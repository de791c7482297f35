package syscalls

import (
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/platform/fake"
	"github.com/moat-sandbox/moat/sentry/kernel/kerneltest"
)

// TestEveryUnsupportedCallSaysWhy: each x86-64 call has a row, and one of
// support none says whether it is not yet there (ENOSYS), by design, or
// privileged, with the errno it answers.
func TestEveryUnsupportedCallSaysWhy(t *testing.T) {
	for nr, name := range names {
		if name == "" {
			continue
		}
		if nr >= len(table) || table[nr].Name == "" {
			t.Errorf("%s (%d) has no row in the table", name, nr)
			continue
		}
		e := table[nr]
		switch {
		case e.Support != None:
			if e.Fn == nil || e.Why != 0 {
				t.Errorf("%s: a supported row has no handler, or a reason", name)
			}
		case e.Fn != nil:
			t.Errorf("%s: a row of support none has a handler", name)
		case e.Why < NotYet || e.Why > NeedsPrivilege:
			t.Errorf("%s: no reason for support none", name)
		case e.Why == NotYet && e.Errno != unix.ENOSYS:
			t.Errorf("%s is not yet there but answers %v, not ENOSYS", name, e.Errno)
		case e.Errno == 0:
			t.Errorf("%s answers no errno", name)
		case !strings.HasPrefix(e.Note, e.Why.String()+" ("+unix.ErrnoName(e.Errno)+"): "):
			t.Errorf("%s: note %q does not start with its reason and errno", name, e.Note)
		}
	}
}

// TestUnsupportedCallsAnswerTheirRowsErrnoAndAreLoggedOnce runs them in a
// guest.
func TestUnsupportedCallsAnswerTheirRowsErrnoAndAreLoggedOnce(t *testing.T) {
	want := map[uintptr]unix.Errno{
		unix.SYS_QUOTACTL:        unix.ENOSYS, // not yet
		unix.SYS_REBOOT:          unix.EPERM,  // by design
		unix.SYS_RESTART_SYSCALL: unix.EINTR,  // by design
		unix.SYS_FSOPEN:          unix.EPERM,  // needs privilege
		unix.SYS_TUXCALL:         unix.ENOSYS, // by design: Linux never had it
		100000:                   unix.ENOSYS, // no such call
	}
	s := kerneltest.New(t, NewTable())
	s.Run(func(g *fake.Guest) {
		for nr, errno := range want {
			for range 2 {
				if _, got := g.Call(nr); got != errno {
					t.Errorf("call %d (%s) answered %v, want %v", nr, Name(nr), got, errno)
				}
			}
		}
	})
	for _, line := range []string{"unsupported syscall reboot (169): by design, EPERM",
		"unsupported syscall quotactl (179): not yet, ENOSYS", "unsupported syscall fsopen (430): needs privilege, EPERM"} {
		if n := strings.Count(s.Log(), line); n != 1 {
			t.Errorf("the log has %q %d times, want once:\n%s", line, n, s.Log())
		}
	}
}
