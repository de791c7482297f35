package kernel

import (
	"testing"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/internal/linuxabi"
)

const sigRT = sigRTMin + 2 // a real-time signal (SIGRTMIN as glibc numbers it)

func info(sig int, value uint64) SigInfo {
	i := SigInfo{Signo: int32(sig), Code: linuxabi.SI_QUEUE}
	i.SetValue(value)
	return i
}

func valueOf(i SigInfo) uint64 {
	var v uint64
	for b := 0; b < 8; b++ {
		v |= uint64(i.Fields[8+b]) << (8 * b)
	}
	return v
}

// drain dequeues until nothing unblocked is left, returning signal and
// value of each.
func drain(q *sigQueue, blocked uint64) [][2]uint64 {
	var out [][2]uint64
	for {
		i, ok := q.dequeue(blocked)
		if !ok {
			return out
		}
		out = append(out, [2]uint64{uint64(i.Signo), valueOf(i)})
	}
}

func TestAStandardSignalPendingTwiceIsDeliveredOnceWithTheFirstInfo(t *testing.T) {
	var q sigQueue
	q.enqueue(info(int(unix.SIGUSR1), 1))
	q.enqueue(info(int(unix.SIGUSR1), 2))
	got := drain(&q, 0)
	if len(got) != 1 || got[0] != [2]uint64{uint64(unix.SIGUSR1), 1} {
		t.Errorf("dequeued %v, want SIGUSR1 once, with the first sender's value", got)
	}
	if q.mask != 0 {
		t.Errorf("mask %#x after the queue drained", q.mask)
	}
}

func TestRealTimeSignalsQueueEveryInstanceInOrder(t *testing.T) {
	var q sigQueue
	for v := uint64(1); v <= 3; v++ {
		q.enqueue(info(sigRT, v))
	}
	got := drain(&q, 0)
	want := [][2]uint64{{sigRT, 1}, {sigRT, 2}, {sigRT, 3}}
	if len(got) != len(want) {
		t.Fatalf("dequeued %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("dequeued %v, want %v", got, want)
		}
	}
}

func TestATakenRealTimeSignalStaysPendingWhileInstancesRemain(t *testing.T) {
	var q sigQueue
	q.enqueue(info(sigRT, 1))
	q.enqueue(info(sigRT, 2))
	q.dequeue(0)
	if q.mask&sigBit(sigRT) == 0 {
		t.Errorf("the signal left the pending mask with an instance still queued")
	}
	q.dequeue(0)
	if q.mask&sigBit(sigRT) != 0 {
		t.Errorf("the signal is still pending with its queue empty")
	}
}

func TestDequeueTakesTheLowestNumberedUnblockedSignalFirst(t *testing.T) {
	var q sigQueue
	for _, sig := range []int{sigRT + 1, int(unix.SIGTERM), sigRT, int(unix.SIGUSR1), int(unix.SIGHUP)} {
		q.enqueue(info(sig, 0))
	}
	blocked := sigBit(int(unix.SIGHUP))
	var order []uint64
	for _, d := range drain(&q, blocked) {
		order = append(order, d[0])
	}
	want := []uint64{uint64(unix.SIGUSR1), uint64(unix.SIGTERM), sigRT, sigRT + 1}
	if len(order) != len(want) {
		t.Fatalf("order %v, want %v", order, want)
	}
	for i := range want {
		if order[i] != want[i] {
			t.Fatalf("order %v, want %v", order, want)
		}
	}
	if q.mask != sigBit(int(unix.SIGHUP)) {
		t.Errorf("pending %#x, want the blocked SIGHUP alone", q.mask)
	}
	if _, ok := q.dequeue(blocked); ok {
		t.Errorf("a blocked signal was dequeued")
	}
	if i, ok := q.dequeue(0); !ok || i.Signo != int32(unix.SIGHUP) {
		t.Errorf("unblocked SIGHUP not dequeued")
	}
}

func TestFaultSignalsAreDequeuedBeforeLowerNumberedOnes(t *testing.T) {
	var q sigQueue
	q.enqueue(info(int(unix.SIGHUP), 0))
	q.enqueue(info(int(unix.SIGINT), 0))
	q.enqueue(info(int(unix.SIGSEGV), 0))
	if i, _ := q.dequeue(0); i.Signo != int32(unix.SIGSEGV) {
		t.Errorf("first %v, want SIGSEGV: a synchronous signal comes first", unix.Signal(i.Signo))
	}
	if i, _ := q.dequeue(0); i.Signo != int32(unix.SIGHUP) {
		t.Errorf("then %v, want SIGHUP", unix.Signal(i.Signo))
	}
}

func TestDiscardDropsEveryQueuedInstance(t *testing.T) {
	var q sigQueue
	q.enqueue(info(sigRT, 1))
	q.enqueue(info(sigRT, 2))
	q.enqueue(info(int(unix.SIGUSR2), 0))
	q.discard(sigRT)
	got := drain(&q, 0)
	if len(got) != 1 || got[0][0] != uint64(unix.SIGUSR2) {
		t.Errorf("after discarding the real-time signal: %v, want SIGUSR2 alone", got)
	}
}

func TestDefaultActionsAreSignal7s(t *testing.T) {
	want := map[unix.Signal]defaultAction{
		unix.SIGHUP: actTerminate, unix.SIGINT: actTerminate, unix.SIGQUIT: actCore, unix.SIGILL: actCore,
		unix.SIGTRAP: actCore, unix.SIGABRT: actCore, unix.SIGBUS: actCore, unix.SIGFPE: actCore,
		unix.SIGKILL: actTerminate, unix.SIGUSR1: actTerminate, unix.SIGSEGV: actCore, unix.SIGUSR2: actTerminate,
		unix.SIGPIPE: actTerminate, unix.SIGALRM: actTerminate, unix.SIGTERM: actTerminate,
		unix.SIGSTKFLT: actTerminate, unix.SIGCHLD: actIgnore, unix.SIGCONT: actContinue, unix.SIGSTOP: actStop,
		unix.SIGTSTP: actStop, unix.SIGTTIN: actStop, unix.SIGTTOU: actStop, unix.SIGURG: actIgnore,
		unix.SIGXCPU: actCore, unix.SIGXFSZ: actCore, unix.SIGVTALRM: actTerminate, unix.SIGPROF: actTerminate,
		unix.SIGWINCH: actIgnore, unix.SIGIO: actTerminate, unix.SIGPWR: actTerminate, unix.SIGSYS: actCore,
	}
	for sig := 1; sig <= linuxabi.NSIG; sig++ {
		w, ok := want[unix.Signal(sig)]
		if !ok {
			w = actTerminate // the real-time signals, and 32 and 33 that glibc keeps
		}
		if got := defaultActionOf(sig); got != w {
			t.Errorf("default action of signal %d (%s) = %d, want %d", sig, SignalName(sig), got, w)
		}
	}
}

// testProcess is a process of a kernel with no platform, holding tasks
// that never run: enough for the signal bookkeeping.
func testProcess(tasks int) (*ThreadGroup, []*Task) {
	k := &Kernel{rootPIDNS: newRootPIDNamespace()}
	tg := newThreadGroup(k, 2, &SigHand{})
	for i := 0; i < tasks; i++ {
		tg.tasks = append(tg.tasks, newTask(k, tg))
	}
	return tg, tg.tasks
}

func sendTo(tg *ThreadGroup, target *Task, sig unix.Signal) {
	tg.mu.Lock()
	tg.sendLocked(SigInfo{Signo: int32(sig), Code: linuxabi.SI_USER}, target)
	tg.mu.Unlock()
}

func TestSIGKILLAndSIGSTOPCannotBeCaughtOrIgnored(t *testing.T) {
	tg, _ := testProcess(1)
	for _, sig := range []unix.Signal{unix.SIGKILL, unix.SIGSTOP} {
		for _, h := range []uint64{linuxabi.SIG_IGN, 0x1000} {
			if _, err := tg.SetAction(int(sig), SigAction{Handler: h}); err != unix.EINVAL {
				t.Errorf("sigaction(%v, %#x) = %v, want EINVAL", sig, h, err)
			}
			if tg.Action(int(sig)).Handler != linuxabi.SIG_DFL {
				t.Errorf("the action of %v changed", sig)
			}
		}
	}
	for _, sig := range []int{0, linuxabi.NSIG + 1} {
		if _, err := tg.SetAction(sig, SigAction{}); err != unix.EINVAL {
			t.Errorf("sigaction(%d) = %v, want EINVAL", sig, err)
		}
	}
}

func TestAHandlersMaskNeverHoldsSIGKILLOrSIGSTOP(t *testing.T) {
	tg, _ := testProcess(1)
	tg.SetAction(int(unix.SIGUSR1), SigAction{Handler: 0x1000, Mask: ^uint64(0)})
	if m := tg.Action(int(unix.SIGUSR1)).Mask; m&unblockable != 0 || m|unblockable != ^uint64(0) {
		t.Errorf("mask %#x, want every signal but SIGKILL and SIGSTOP", m)
	}
}

func TestSigprocmaskCannotBlockSIGKILLOrSIGSTOP(t *testing.T) {
	_, tasks := testProcess(1)
	tasks[0].SetSigMask(^uint64(0))
	if m := tasks[0].SigMask(); m != ^uint64(unblockable) {
		t.Errorf("mask %#x, want all but SIGKILL and SIGSTOP", m)
	}
}

func TestIgnoringASignalDiscardsItsPendingInstances(t *testing.T) {
	for _, tc := range []struct {
		sig unix.Signal
		act SigAction
	}{
		{unix.SIGUSR1, SigAction{Handler: linuxabi.SIG_IGN}},
		{unix.SIGURG, SigAction{Handler: linuxabi.SIG_DFL}}, // its default is to ignore
	} {
		tg, tasks := testProcess(2)
		for _, task := range tasks {
			task.SetSigMask(sigBit(int(tc.sig)))
		}
		sendTo(tg, nil, tc.sig)
		sendTo(tg, tasks[1], tc.sig)
		if tasks[1].Pending()&sigBit(int(tc.sig)) == 0 {
			t.Fatalf("%v: a blocked signal is not pending", tc.sig)
		}
		tg.SetAction(int(tc.sig), tc.act)
		if p := tasks[1].Pending(); p != 0 {
			t.Errorf("%v still pending (%#x) after its action became %#x", tc.sig, p, tc.act.Handler)
		}
	}
}

func TestSettingAHandlerKeepsPendingInstances(t *testing.T) {
	tg, tasks := testProcess(1)
	tasks[0].SetSigMask(sigBit(int(unix.SIGUSR1)))
	sendTo(tg, nil, unix.SIGUSR1)
	tg.SetAction(int(unix.SIGUSR1), SigAction{Handler: 0x1000})
	if tasks[0].Pending()&sigBit(int(unix.SIGUSR1)) == 0 {
		t.Errorf("installing a handler discarded the pending signal")
	}
}

func TestAnIgnoredSignalIsNotQueuedUnlessBlocked(t *testing.T) {
	tg, tasks := testProcess(1)
	tg.SetAction(int(unix.SIGUSR2), SigAction{Handler: linuxabi.SIG_IGN})
	sendTo(tg, nil, unix.SIGUSR2)
	sendTo(tg, nil, unix.SIGCHLD) // ignored by default
	if p := tasks[0].Pending(); p != 0 {
		t.Errorf("pending %#x: ignored signals were queued", p)
	}
	tasks[0].SetSigMask(sigBit(int(unix.SIGUSR2)) | sigBit(int(unix.SIGCHLD)))
	sendTo(tg, nil, unix.SIGUSR2)
	sendTo(tg, nil, unix.SIGCHLD)
	if p, want := tasks[0].Pending(), sigBit(int(unix.SIGUSR2))|sigBit(int(unix.SIGCHLD)); p != want {
		t.Errorf("pending %#x, want %#x: a blocked signal stays pending for sigwait whatever its action", p, want)
	}
}

func TestSIGCONTDiscardsPendingStopSignalsAndAStopSignalAPendingSIGCONT(t *testing.T) {
	tg, tasks := testProcess(1)
	stops := []unix.Signal{unix.SIGSTOP, unix.SIGTSTP, unix.SIGTTIN, unix.SIGTTOU}
	var all uint64
	for _, s := range stops {
		all |= sigBit(int(s))
	}
	tasks[0].SetSigMask(all | sigBit(int(unix.SIGCONT)))
	for _, s := range stops[1:] { // SIGSTOP cannot be blocked: it would stop the process
		sendTo(tg, nil, s)
	}
	sendTo(tg, nil, unix.SIGCONT)
	if p := tasks[0].Pending(); p != sigBit(int(unix.SIGCONT)) {
		t.Errorf("pending %#x after SIGCONT, want SIGCONT alone: it discards pending stop signals", p)
	}
	sendTo(tg, nil, unix.SIGTSTP)
	if p := tasks[0].Pending(); p != sigBit(int(unix.SIGTSTP)) {
		t.Errorf("pending %#x after SIGTSTP, want SIGTSTP alone: it discards a pending SIGCONT", p)
	}
}

func TestAProcessSignalWakesAThreadThatDoesNotBlockIt(t *testing.T) {
	tg, tasks := testProcess(2)
	tasks[0].SetSigMask(sigBit(int(unix.SIGUSR1)))
	sendTo(tg, nil, unix.SIGUSR1)
	if tasks[0].check.Load() {
		t.Errorf("the thread blocking the signal was made to look at it")
	}
	if !tasks[1].check.Load() {
		t.Errorf("the thread not blocking the signal was not made to look at it")
	}
	if tg.pending.mask != sigBit(int(unix.SIGUSR1)) || tasks[1].pending.mask != 0 {
		t.Errorf("a process signal went to a thread's own queue")
	}
}

func TestAThreadSignalWaitsInThatThreadsQueueAlone(t *testing.T) {
	tg, tasks := testProcess(2)
	for _, task := range tasks {
		task.SetSigMask(sigBit(int(unix.SIGUSR1)))
	}
	sendTo(tg, tasks[1], unix.SIGUSR1)
	if tasks[0].Pending() != 0 {
		t.Errorf("a signal for thread 2 is pending for thread 1")
	}
	tg.mu.Lock()
	_, ok0 := tasks[0].takeSignalLocked(sigBit(int(unix.SIGUSR1)))
	_, ok1 := tasks[1].takeSignalLocked(sigBit(int(unix.SIGUSR1)))
	tg.mu.Unlock()
	if ok0 || !ok1 {
		t.Errorf("sigwait took it in thread 1: %v, in thread 2: %v; want thread 2 only", ok0, ok1)
	}
}

func TestSIGKILLEndsTheProcessAtOnceEvenWhenStopped(t *testing.T) {
	tg, tasks := testProcess(2)
	tg.mu.Lock()
	tg.stopLocked(int(unix.SIGSTOP))
	tg.mu.Unlock()
	sendTo(tg, nil, unix.SIGKILL)
	if !tg.exiting || tg.status.Signo != int(unix.SIGKILL) {
		t.Errorf("exiting %v status %+v, want killed by SIGKILL", tg.exiting, tg.status)
	}
	if tg.stopped {
		t.Errorf("a killed process stays stopped: it must run to die")
	}
	for i, task := range tasks {
		if !task.exiting.Load() {
			t.Errorf("task %d not told to exit", i)
		}
	}
}

func TestExecResetsCaughtSignalsAndKeepsIgnoredOnes(t *testing.T) {
	h := &SigHand{}
	h.actions[unix.SIGUSR1] = SigAction{Handler: 0x1000, Flags: linuxabi.SA_RESTART, Mask: 7}
	h.actions[unix.SIGUSR2] = SigAction{Handler: linuxabi.SIG_IGN, Flags: linuxabi.SA_RESTART, Mask: 7}
	h.resetCaught()
	if a := h.actions[unix.SIGUSR1]; a != (SigAction{}) {
		t.Errorf("a caught signal after exec: %+v, want the default", a)
	}
	// Linux's flush_signal_handlers clears the flags and mask of an
	// ignored signal too.
	if a := h.actions[unix.SIGUSR2]; a != (SigAction{Handler: linuxabi.SIG_IGN}) {
		t.Errorf("an ignored signal after exec: %+v, want SIG_IGN with no flags or mask", a)
	}
}

// peek (PTRACE_PEEKSIGINFO) lists the queued signals in the order they
// arrived, whatever their numbers, from an offset, and forgets the taken.
func TestPeekListsPendingSignalsInArrivalOrder(t *testing.T) {
	var q sigQueue
	sent := []int{sigRT + 1, int(unix.SIGTERM), sigRT, sigRT + 1, int(unix.SIGTERM), int(unix.SIGHUP)}
	for i, sig := range sent {
		q.enqueue(info(sig, uint64(i)))
	}
	// The second SIGTERM is dropped: a standard signal is pending once.
	want := []int32{sigRT + 1, int32(unix.SIGTERM), sigRT, sigRT + 1, int32(unix.SIGHUP)}
	check := func(got []SigInfo, want []int32) {
		t.Helper()
		if len(got) != len(want) {
			t.Fatalf("peek gave %d signals, want %d", len(got), len(want))
		}
		for i := range want {
			if got[i].Signo != want[i] {
				t.Errorf("peek[%d] = signal %d, want %d", i, got[i].Signo, want[i])
			}
		}
	}
	check(q.peek(0, 100), want)
	check(q.peek(1, 2), want[1:3])
	check(q.peek(4, 10), want[4:])
	check(q.peek(5, 10), nil)
	check(q.peek(0, 0), nil)
	q.take(int(unix.SIGTERM))
	q.take(sigRT + 1)
	check(q.peek(0, 100), []int32{sigRT, sigRT + 1, int32(unix.SIGHUP)})
	q.enqueue(info(int(unix.SIGTERM), 9))
	check(q.peek(0, 100), []int32{sigRT, sigRT + 1, int32(unix.SIGHUP), int32(unix.SIGTERM)})
}
