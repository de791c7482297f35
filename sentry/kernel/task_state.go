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

// Prctl holds the flags prctl(2) sets on a task.
type Prctl struct {
	PdeathSig  int
	Dumpable   int // 1 unless set to 0
	NoNewPrivs bool
	KeepCaps   bool
	TimerSlack uint64 // ns
	THPDisable bool
}

// PrctlState returns the task's prctl flags for reading and writing; only
// the task itself changes them, so no lock is needed.
func (t *Task) PrctlState() *Prctl { return &t.prctl }

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
