package kernel

import (
	"strings"

	"golang.org/x/sys/unix"
)

// numSignals is the highest signal number (SIGRTMAX).
const numSignals = 64

// unblockable are the signals no mask can hold back.
const unblockable = 1<<(unix.SIGKILL-1) | 1<<(unix.SIGSTOP-1)

// SigAction is one rt_sigaction entry, as the guest set it.
type SigAction struct {
	Handler  uint64 // SIG_DFL (0), SIG_IGN (1) or an address
	Flags    uint64
	Restorer uint64
	Mask     uint64
}

// Special handler values.
const (
	SigDfl = 0
	SigIgn = 1
)

// defaultAction is what a signal does to a process with no handler.
type defaultAction int

const (
	actTerminate defaultAction = iota
	actCore
	actIgnore
	actStop
	actContinue
)

func defaultActionOf(sig int) defaultAction {
	switch unix.Signal(sig) {
	case unix.SIGCHLD, unix.SIGURG, unix.SIGWINCH:
		return actIgnore
	case unix.SIGSTOP, unix.SIGTSTP, unix.SIGTTIN, unix.SIGTTOU:
		return actStop
	case unix.SIGCONT:
		return actContinue
	case unix.SIGQUIT, unix.SIGILL, unix.SIGTRAP, unix.SIGABRT, unix.SIGBUS, unix.SIGFPE,
		unix.SIGSEGV, unix.SIGXCPU, unix.SIGXFSZ, unix.SIGSYS:
		return actCore
	}
	return actTerminate
}

// ValidSignal reports whether sig is a signal number (1..64).
func ValidSignal(sig int) bool { return sig >= 1 && sig <= numSignals }

// Action returns the process's action for sig.
func (tg *ThreadGroup) Action(sig int) SigAction {
	tg.mu.Lock()
	defer tg.mu.Unlock()
	return tg.actions[sig]
}

// SetAction replaces the action for sig and returns the old one. SIGKILL
// and SIGSTOP cannot be caught or ignored.
func (tg *ThreadGroup) SetAction(sig int, act SigAction) (SigAction, error) {
	if !ValidSignal(sig) {
		return SigAction{}, unix.EINVAL
	}
	tg.mu.Lock()
	defer tg.mu.Unlock()
	old := tg.actions[sig]
	if sig == int(unix.SIGKILL) || sig == int(unix.SIGSTOP) {
		return old, unix.EINVAL
	}
	act.Mask &^= unblockable
	tg.actions[sig] = act
	return old, nil
}

// SignalName returns "SIGTERM" for 15, and so on.
func SignalName(sig int) string {
	name := unix.SignalName(unix.Signal(sig))
	if name == "" {
		return "signal " + strings.TrimSpace(string(rune('0'+sig%10)))
	}
	return name
}
