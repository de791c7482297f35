package kernel

import (
	"encoding/binary"
	"sort"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/internal/linuxabi"
)

// sigRTMin is the first real-time signal: those from here on queue.
const sigRTMin = 32

// unblockable are the signals no mask can hold back.
const unblockable = 1<<(unix.SIGKILL-1) | 1<<(unix.SIGSTOP-1)

// sigBit is the mask bit of sig.
func sigBit(sig int) uint64 { return 1 << (sig - 1) }

// SigAction is one rt_sigaction entry, in the guest's layout.
type SigAction struct {
	Handler  uint64 // linuxabi.SIG_DFL, linuxabi.SIG_IGN or an address
	Flags    uint64
	Restorer uint64
	Mask     uint64
}

// SigHand is the table of signal actions that CLONE_SIGHAND shares.
type SigHand struct {
	mu      sync.Mutex
	actions [linuxabi.NSIG + 1]SigAction
}

// copyHand returns a copy (for fork without CLONE_SIGHAND).
func (h *SigHand) copyHand() *SigHand {
	h.mu.Lock()
	defer h.mu.Unlock()
	return &SigHand{actions: h.actions}
}

// resetCaught makes caught signals default, as execve does and clone3's
// CLONE_CLEAR_SIGHAND (Linux's flush_signal_handlers); ignored signals
// stay ignored, but lose their flags and mask as the rest do.
func (h *SigHand) resetCaught() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for i := range h.actions {
		if h.actions[i].Handler == linuxabi.SIG_IGN {
			h.actions[i] = SigAction{Handler: linuxabi.SIG_IGN}
		} else {
			h.actions[i] = SigAction{}
		}
	}
}

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
func ValidSignal(sig int) bool { return sig >= 1 && sig <= linuxabi.NSIG }

// Action returns the process's action for sig.
func (tg *ThreadGroup) Action(sig int) SigAction {
	h := tg.sighand
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.actions[sig]
}

// SetAction replaces the action for sig and returns the old one. SIGKILL
// and SIGSTOP cannot be caught or ignored. Setting SIG_IGN (or SIG_DFL for
// a signal whose default is to ignore) discards what is pending.
func (tg *ThreadGroup) SetAction(sig int, act SigAction) (SigAction, error) {
	if !ValidSignal(sig) {
		return SigAction{}, unix.EINVAL
	}
	h := tg.sighand
	h.mu.Lock()
	old := h.actions[sig]
	if sig == int(unix.SIGKILL) || sig == int(unix.SIGSTOP) {
		h.mu.Unlock()
		return old, unix.EINVAL
	}
	act.Mask &^= unblockable
	h.actions[sig] = act
	h.mu.Unlock()
	if act.Handler == linuxabi.SIG_IGN || (act.Handler == linuxabi.SIG_DFL && defaultActionOf(sig) == actIgnore) {
		tg.discardPending(sig)
	}
	return old, nil
}

// SigInfo is a siginfo_t, in the guest's 128-byte layout.
type SigInfo struct {
	Signo int32
	Errno int32
	Code  int32
	_     int32
	// Fields is the union that follows; the setters below fill it as
	// Linux does for each kind of signal.
	Fields [112]byte
}

// SetSender records who sent a signal (kill, tkill, sigqueue).
func (s *SigInfo) SetSender(pid int32, uid uint32) {
	binary.LittleEndian.PutUint32(s.Fields[0:], uint32(pid))
	binary.LittleEndian.PutUint32(s.Fields[4:], uid)
}

// UID returns the sender's uid field.
func (s *SigInfo) UID() uint32 { return binary.LittleEndian.Uint32(s.Fields[4:]) }

// SetValue records sigqueue's value, after the sender.
func (s *SigInfo) SetValue(v uint64) { binary.LittleEndian.PutUint64(s.Fields[8:], v) }

// SetSeccomp records what a seccomp SECCOMP_RET_TRAP's SIGSYS tells: the
// address after the call's instruction, its number and its architecture
// (siginfo's _sigsys).
func (s *SigInfo) SetSeccomp(callAddr uint64, nr int32, arch uint32) {
	binary.LittleEndian.PutUint64(s.Fields[0:], callAddr)
	binary.LittleEndian.PutUint32(s.Fields[8:], uint32(nr))
	binary.LittleEndian.PutUint32(s.Fields[12:], arch)
}

// SetAddr records a fault's address.
func (s *SigInfo) SetAddr(addr uint64) { binary.LittleEndian.PutUint64(s.Fields[0:], addr) }

// SetChild records a SIGCHLD's child and status.
func (s *SigInfo) SetChild(pid int32, uid uint32, status int32) {
	s.SetSender(pid, uid)
	binary.LittleEndian.PutUint32(s.Fields[8:], uint32(status))
}

// Pid returns the sender's pid field.
func (s *SigInfo) Pid() int32 { return int32(binary.LittleEndian.Uint32(s.Fields[0:])) }

// SignalName returns "SIGTERM" for 15, and so on.
func SignalName(sig int) string { return unix.SignalName(unix.Signal(sig)) }

// sigQueue holds pending signals: standard signals at most once, real-time
// signals queued.
type sigQueue struct {
	mask  uint64
	infos [linuxabi.NSIG + 1][]SigInfo
	// seqs[sig][i] is when infos[sig][i] was queued, counted by next:
	// the order of arrival across signals, which PTRACE_PEEKSIGINFO
	// shows (Linux's one list of queued signals).
	seqs [linuxabi.NSIG + 1][]uint64
	next uint64
}

// enqueue adds info; a standard signal already pending is dropped.
func (q *sigQueue) enqueue(info SigInfo) {
	sig := int(info.Signo)
	if sig < sigRTMin && q.mask&sigBit(sig) != 0 {
		return
	}
	q.mask |= sigBit(sig)
	q.infos[sig] = append(q.infos[sig], info)
	q.seqs[sig] = append(q.seqs[sig], q.next)
	q.next++
}

// peek returns up to n of the queued signals in the order they arrived,
// from the off-th on.
func (q *sigQueue) peek(off uint64, n int) []SigInfo {
	type entry struct {
		seq  uint64
		info SigInfo
	}
	var all []entry
	for sig := range q.infos {
		for i, info := range q.infos[sig] {
			all = append(all, entry{q.seqs[sig][i], info})
		}
	}
	if off >= uint64(len(all)) {
		return nil
	}
	sort.Slice(all, func(i, j int) bool { return all[i].seq < all[j].seq })
	all = all[off:]
	out := make([]SigInfo, 0, min(n, len(all)))
	for _, e := range all[:min(n, len(all))] {
		out = append(out, e.info)
	}
	return out
}

// syncSignals are delivered first when pending: the faults a thread caused.
const syncSignals = 1<<(unix.SIGSEGV-1) | 1<<(unix.SIGBUS-1) | 1<<(unix.SIGILL-1) |
	1<<(unix.SIGTRAP-1) | 1<<(unix.SIGFPE-1) | 1<<(unix.SIGSYS-1)

// dequeue takes the signal to deliver next among those not blocked.
func (q *sigQueue) dequeue(blocked uint64) (SigInfo, bool) {
	ready := q.mask &^ blocked
	if ready == 0 {
		return SigInfo{}, false
	}
	if ready&syncSignals != 0 {
		ready &= syncSignals
	}
	sig := 1
	for ready&1 == 0 {
		ready >>= 1
		sig++
	}
	return q.take(sig), true
}

// take removes one instance of sig.
func (q *sigQueue) take(sig int) SigInfo {
	info := q.infos[sig][0]
	q.infos[sig] = q.infos[sig][1:]
	q.seqs[sig] = q.seqs[sig][1:]
	if len(q.infos[sig]) == 0 {
		q.infos[sig] = nil
		q.seqs[sig] = nil
		q.mask &^= sigBit(sig)
	}
	return info
}

// discard drops every pending instance of sig.
func (q *sigQueue) discard(sig int) {
	q.infos[sig] = nil
	q.seqs[sig] = nil
	q.mask &^= sigBit(sig)
}
