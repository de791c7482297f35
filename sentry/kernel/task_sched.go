package kernel

import (
	"math/bits"

	"golang.org/x/sys/unix"
)

// Sched is what the scheduling calls record on a task: its policy and
// priority (sched_setscheduler, sched_setattr), nice value (setpriority),
// CPU affinity (sched_setaffinity) and I/O priority (ioprio_set). Linux
// keeps them per thread, and a new thread or process starts with its
// creator's. The host schedules every guest thread alike: the sentry
// records these and reports them back, and the host never sees them.
type Sched struct {
	Policy   int // SCHED_NORMAL, SCHED_FIFO, SCHED_RR, SCHED_BATCH, SCHED_IDLE or SCHED_DEADLINE
	Priority int // sched_priority: 1 to 99 under SCHED_FIFO and SCHED_RR, else 0
	Nice     int // -20 to 19
	// ResetOnFork (SCHED_RESET_ON_FORK): a child starts with SCHED_NORMAL
	// and a nice value of at least 0, and without the flag.
	ResetOnFork bool
	// SCHED_DEADLINE's parameters, in nanoseconds.
	Runtime, Deadline, Period uint64
	// IOPrio is ioprio_set's value: class << 13 | data; 0 (class none)
	// until set, when the I/O priority follows the nice value.
	IOPrio int
	// Affinity is the CPUs the task may run on; nil is every CPU of the
	// sandbox.
	Affinity CPUSet
}

// Sched returns the task's scheduling settings.
func (t *Task) Sched() Sched {
	t.tg.mu.Lock()
	defer t.tg.mu.Unlock()
	return t.sched
}

// UpdateSched changes the task's scheduling settings with fn, which sees
// them as they are and may refuse the change with an error: one step, so
// that two callers changing one task do not lose either's change.
func (t *Task) UpdateSched(fn func(s *Sched) error) error {
	t.tg.mu.Lock()
	defer t.tg.mu.Unlock()
	s := t.sched
	if err := fn(&s); err != nil {
		return err
	}
	t.sched = s
	if s.Affinity != nil && (len(s.Affinity) == 0 || s.Affinity[0]&1 == 0) {
		t.k.vdso.params.TrapGetcpu() // this task's CPU is no longer 0 (CPU)
	}
	return nil
}

// CPU is the CPU the task runs on, as getcpu and the vDSO report it: the
// lowest its affinity allows. The host schedules guest threads where it
// likes, and the sandbox's CPUs are numbered for the guest alone, so the
// answer is one the task's affinity allows, not where it ran last.
func (t *Task) CPU() int {
	for i, w := range t.CPUs() {
		if w != 0 {
			return i*64 + bits.TrailingZeros64(w)
		}
	}
	return 0
}

// forkSched is what a new task created by one with s starts with.
func forkSched(s Sched) Sched {
	if s.ResetOnFork {
		switch s.Policy {
		case unix.SCHED_FIFO, unix.SCHED_RR, unix.SCHED_DEADLINE:
			s.Policy, s.Priority, s.Nice = unix.SCHED_NORMAL, 0, 0
			s.Runtime, s.Deadline, s.Period = 0, 0, 0
		}
		s.Nice = max(s.Nice, 0)
		s.ResetOnFork = false
	}
	return s
}

// CPUSet is a set of CPUs in Linux's cpumask layout: bit i of word i/64
// is CPU i.
type CPUSet []uint64

// AllCPUs is every CPU of the sandbox (NumCPUs).
func (k *Kernel) AllCPUs() CPUSet {
	n := k.NumCPUs()
	s := make(CPUSet, (n+63)/64)
	for i := 0; i < n; i++ {
		s[i/64] |= 1 << (i % 64)
	}
	return s
}

// CPUs returns the task's affinity as a set: every CPU if it never set
// one. A cpuset made smaller since (moat update) cuts the affinity to
// it, or replaces it if none of its CPUs is left, as Linux moves a task
// whose CPUs all left its cpuset onto the cpuset's.
func (t *Task) CPUs() CPUSet {
	all := t.k.AllCPUs()
	a := t.Sched().Affinity
	if a == nil {
		return all
	}
	if c := a.Intersect(all); !c.Empty() {
		return append(c, make(CPUSet, len(all)-len(c))...)
	}
	return all
}

// Intersect returns the CPUs of c that are also in o.
func (c CPUSet) Intersect(o CPUSet) CPUSet {
	out := make(CPUSet, min(len(c), len(o)))
	for i := range out {
		out[i] = c[i] & o[i]
	}
	return out
}

// Empty reports whether c holds no CPU.
func (c CPUSet) Empty() bool {
	for _, w := range c {
		if w != 0 {
			return false
		}
	}
	return true
}

// Count is how many CPUs c holds.
func (c CPUSet) Count() int {
	n := 0
	for _, w := range c {
		for ; w != 0; w &= w - 1 {
			n++
		}
	}
	return n
}
