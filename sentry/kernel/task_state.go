package kernel

// Per-task settings that system calls record and report: prctl's flags and
// the alternate signal stack. They live here, not in the syscall layer, so
// that fork and exec (which copy or reset them) see them.

// AltStack is a sigaltstack(2) setting.
type AltStack struct {
	SP    uint64
	Flags int32
	Size  uint64
}

// Prctl holds the flags prctl(2) sets on a task. Only the task changes them
// (prctl, exec), but other tasks read them: a parent's exit its child's
// PdeathSig, /proc/PID/status NoNewPrivs. They are read and written under
// the process's mu, which a read from the task itself needs no more than
// its write does.
type Prctl struct {
	PdeathSig  int
	Dumpable   int // 1 unless set to 0
	NoNewPrivs bool
	KeepCaps   bool
	TimerSlack uint64 // ns
	// DefaultTimerSlack is what PR_SET_TIMERSLACK 0 sets TimerSlack to:
	// the creator's TimerSlack when the task was made.
	DefaultTimerSlack uint64
	THPDisable        bool
	// Personality is personality(2)'s persona: fork copies it and exec
	// keeps it (the sandbox has no set-user-ID exec, which would clear
	// PER_CLEAR_ON_SETID); ADDR_NO_RANDOMIZE fixes an exec's layout.
	Personality uint32
}

// Prctl returns the task's prctl flags.
func (t *Task) Prctl() Prctl {
	t.tg.mu.Lock()
	defer t.tg.mu.Unlock()
	return t.prctl
}

// SetPrctl sets the task's prctl flags; only the task itself calls it.
func (t *Task) SetPrctl(p Prctl) {
	t.tg.mu.Lock()
	t.prctl = p
	t.tg.mu.Unlock()
}

// ChildSubreaper reports and sets PR_SET_CHILD_SUBREAPER on the process.
func (tg *ThreadGroup) ChildSubreaper() bool {
	tg.mu.Lock()
	defer tg.mu.Unlock()
	return tg.subreaper
}

// SetChildSubreaper sets PR_SET_CHILD_SUBREAPER.
func (tg *ThreadGroup) SetChildSubreaper(on bool) {
	tg.mu.Lock()
	tg.subreaper = on
	tg.mu.Unlock()
}
