package syscalls

import (
	"github.com/moat-sandbox/moat/internal/linuxabi"
	"github.com/moat-sandbox/moat/sentry/arch"
	"github.com/moat-sandbox/moat/sentry/kernel"
)

// Personality implements Linux syscall personality(2): it returns the
// persona and sets the one given, unless that is PER_QUERY. Linux takes
// any value; moat acts only on ADDR_NO_RANDOMIZE.
func Personality(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	p := t.Prctl()
	old := p.Personality
	if persona := uint32(a[0]); persona != linuxabi.PER_QUERY {
		p.Personality = persona
		t.SetPrctl(p)
	}
	return uintptr(old), nil
}
