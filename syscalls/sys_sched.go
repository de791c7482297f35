package syscalls

import (
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/internal/linuxabi"
	"github.com/moat-sandbox/moat/sentry/arch"
	"github.com/moat-sandbox/moat/sentry/kernel"
	"github.com/moat-sandbox/moat/sentry/mm"
)

// The scheduling calls: nice values (getpriority, setpriority), policies
// and priorities (the sched_* family), CPU affinity and I/O priorities,
// with Linux's checks. They act on one thread (a pid argument is a thread
// id, 0 the caller), except where a process group or a user is named.
// The sentry records what they set (kernel.Sched); the host runs every
// guest thread alike.

// schedTarget is the thread a sched_* call names: the caller for 0.
func schedTarget(t *kernel.Task, pid int32) (*kernel.Task, error) {
	if pid == 0 {
		return t, nil
	}
	if target := t.LookupTask(pid); target != nil {
		return target, nil
	}
	return nil, unix.ESRCH
}

// priorityTargets are the threads getpriority and setpriority act on.
func priorityTargets(t *kernel.Task, which int, who int32) ([]*kernel.Task, error) {
	k := t.Kernel()
	switch which {
	case unix.PRIO_PROCESS:
		target, err := schedTarget(t, who)
		if err != nil {
			return nil, err
		}
		return []*kernel.Task{target}, nil
	case unix.PRIO_PGRP:
		pgid := t.RootPGID()
		if who != 0 {
			pgid = t.RootID(who)
		}
		var out []*kernel.Task
		for _, tg := range k.ProcessGroup(pgid) {
			out = append(out, tg.Tasks()...)
		}
		return out, nil
	case unix.PRIO_USER:
		uid := uint32(who)
		if who == 0 {
			uid = t.IDs().UID
		}
		var out []*kernel.Task
		for _, tg := range k.ThreadGroupsIn(t.PIDNamespace()) {
			for _, x := range tg.Tasks() {
				if x.IDs().UID == uid {
					out = append(out, x)
				}
			}
		}
		return out, nil
	}
	return nil, unix.EINVAL
}

// Getpriority implements Linux syscall getpriority(2). It returns 20 less
// the nice value (1 to 40), the best of the threads named; the C library
// turns it back into a nice value.
func Getpriority(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	targets, err := priorityTargets(t, int(a.Int(0)), a.Int(1))
	if err != nil {
		return 0, err
	}
	best := 0
	for _, x := range targets {
		best = max(best, 20-x.Sched().Nice)
	}
	if best == 0 {
		return 0, unix.ESRCH
	}
	return uintptr(best), nil
}

// canNice reports whether t may give target a nice value of nice below
// its current one (Linux's can_nice): target's RLIMIT_NICE allows nice
// values down to 20 less its value, t's CAP_SYS_NICE any.
func canNice(t, target *kernel.Task, nice int) bool {
	return uint64(20-nice) <= target.Limits().Get(unix.RLIMIT_NICE).Cur || t.Capable(unix.CAP_SYS_NICE)
}

// Setpriority implements Linux syscall setpriority(2). The value is
// clamped to [-20, 19]. A thread the caller does not own gives EPERM, a
// lower value than a thread has without the right to it EACCES; either
// error sticks while the call goes on to the other threads named, as
// Linux's loop does.
func Setpriority(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	targets, err := priorityTargets(t, int(a.Int(0)), a.Int(1))
	if err != nil {
		return 0, err
	}
	nice := min(max(int(a.Int(2)), -20), 19)
	err = unix.ESRCH
	for _, x := range targets {
		if !t.SameOwner(x) && !t.Capable(unix.CAP_SYS_NICE) {
			err = unix.EPERM
			continue
		}
		e := x.UpdateSched(func(s *kernel.Sched) error {
			if nice < s.Nice && !canNice(t, x, nice) {
				return unix.EACCES
			}
			s.Nice = nice
			return nil
		})
		switch {
		case e != nil:
			err = e
		case err == unix.ESRCH:
			err = nil
		}
	}
	return 0, err
}

// Scheduling policies' priority ranges: the real-time policies take 1 to
// 99 (MAX_RT_PRIO-1), the others 0.
const maxRTPriority = 99

func validPolicy(p int) bool {
	switch p {
	case unix.SCHED_NORMAL, unix.SCHED_FIFO, unix.SCHED_RR, unix.SCHED_BATCH, unix.SCHED_IDLE, unix.SCHED_DEADLINE:
		return true
	}
	return false
}

func rtPolicy(p int) bool { return p == unix.SCHED_FIFO || p == unix.SCHED_RR }

func fairPolicy(p int) bool { return p == unix.SCHED_NORMAL || p == unix.SCHED_BATCH }

// schedChange is one request of sched_setscheduler, sched_setparam or
// sched_setattr, decoded.
type schedChange struct {
	policy      int // keepPolicy: the thread's own
	priority    int
	nice        int
	setNice     bool // sched_setattr sets the nice value of fair policies
	resetOnFork bool
	runtime     uint64
	deadline    uint64
	period      uint64
}

// keepPolicy stands for the thread's current policy (Linux's
// SETPARAM_POLICY).
const keepPolicy = -1

// setScheduler applies c to target as Linux's __sched_setscheduler does:
// the request must be valid for its policy (EINVAL), and without
// CAP_SYS_NICE the caller must own the thread and stay within its
// RLIMIT_NICE and RLIMIT_RTPRIO, may not choose SCHED_DEADLINE, nor
// clear SCHED_RESET_ON_FORK (EPERM).
func setScheduler(t, target *kernel.Task, c schedChange) error {
	privileged := t.Capable(unix.CAP_SYS_NICE)
	owner := t.SameOwner(target)
	rtLimit := target.Limits().Get(unix.RLIMIT_RTPRIO).Cur
	return target.UpdateSched(func(s *kernel.Sched) error {
		policy := c.policy
		if policy == keepPolicy {
			policy = s.Policy
		}
		nice := s.Nice
		if c.setNice {
			nice = c.nice
		}
		if c.priority < 0 || c.priority > maxRTPriority || rtPolicy(policy) != (c.priority != 0) {
			return unix.EINVAL
		}
		if policy == unix.SCHED_DEADLINE && !validDeadline(c) {
			return unix.EINVAL
		}
		if !privileged {
			if fairPolicy(policy) && nice < s.Nice && !canNice(t, target, nice) {
				return unix.EPERM
			}
			if rtPolicy(policy) {
				if policy != s.Policy && rtLimit == 0 {
					return unix.EPERM
				}
				if c.priority > s.Priority && uint64(c.priority) > rtLimit {
					return unix.EPERM
				}
			}
			if policy == unix.SCHED_DEADLINE {
				return unix.EPERM
			}
			if s.Policy == unix.SCHED_IDLE && policy != unix.SCHED_IDLE && !canNice(t, target, s.Nice) {
				return unix.EPERM
			}
			if !owner {
				return unix.EPERM
			}
			if s.ResetOnFork && !c.resetOnFork {
				return unix.EPERM
			}
		}
		s.Policy, s.Priority, s.ResetOnFork = policy, c.priority, c.resetOnFork
		if fairPolicy(policy) {
			s.Nice = nice
		}
		s.Runtime, s.Deadline, s.Period = 0, 0, 0
		if policy == unix.SCHED_DEADLINE {
			s.Runtime, s.Deadline, s.Period = c.runtime, c.deadline, c.period
		}
		return nil
	})
}

// validDeadline is Linux's __checkparam_dl: a deadline, a runtime of at
// least 1024 ns within it, the period (0: the deadline) no shorter, and
// none of them at or past 2^63 ns.
func validDeadline(c schedChange) bool {
	const minRuntime = 1 << 10 // DL_SCALE's resolution
	if c.deadline == 0 || c.runtime < minRuntime || c.deadline&(1<<63) != 0 || c.period&(1<<63) != 0 {
		return false
	}
	period := c.period
	if period == 0 {
		period = c.deadline
	}
	return c.runtime <= c.deadline && c.deadline <= period
}

// copyInSchedParam reads a struct sched_param's priority.
func copyInSchedParam(t *kernel.Task, addr uintptr) (int, error) {
	var p int32
	if err := copyInStruct(t, addr, &p); err != nil {
		return 0, err
	}
	return int(p), nil
}

// SchedSetscheduler implements Linux syscall sched_setscheduler(2).
func SchedSetscheduler(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	pid, policy := a.Int(0), int(a.Int(1))
	if policy < 0 || a[2] == 0 || pid < 0 {
		return 0, unix.EINVAL
	}
	prio, err := copyInSchedParam(t, a.Ptr(2))
	if err != nil {
		return 0, err
	}
	target, err := schedTarget(t, pid)
	if err != nil {
		return 0, err
	}
	c := schedChange{policy: policy &^ unix.SCHED_RESET_ON_FORK, priority: prio,
		resetOnFork: policy&unix.SCHED_RESET_ON_FORK != 0}
	// SCHED_DEADLINE's parameters do not fit a sched_param.
	if !validPolicy(c.policy) || c.policy == unix.SCHED_DEADLINE {
		return 0, unix.EINVAL
	}
	return 0, setScheduler(t, target, c)
}

// SchedSetparam implements Linux syscall sched_setparam(2): the priority,
// under the thread's policy.
func SchedSetparam(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	pid := a.Int(0)
	if a[1] == 0 || pid < 0 {
		return 0, unix.EINVAL
	}
	prio, err := copyInSchedParam(t, a.Ptr(1))
	if err != nil {
		return 0, err
	}
	target, err := schedTarget(t, pid)
	if err != nil {
		return 0, err
	}
	s := target.Sched()
	if s.Policy == unix.SCHED_DEADLINE {
		return 0, unix.EINVAL // its parameters are not a priority
	}
	return 0, setScheduler(t, target, schedChange{policy: keepPolicy, priority: prio, resetOnFork: s.ResetOnFork})
}

// SchedGetscheduler implements Linux syscall sched_getscheduler(2).
func SchedGetscheduler(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	pid := a.Int(0)
	if pid < 0 {
		return 0, unix.EINVAL
	}
	target, err := schedTarget(t, pid)
	if err != nil {
		return 0, err
	}
	s := target.Sched()
	policy := s.Policy
	if s.ResetOnFork {
		policy |= unix.SCHED_RESET_ON_FORK
	}
	return uintptr(policy), nil
}

// SchedGetparam implements Linux syscall sched_getparam(2).
func SchedGetparam(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	pid := a.Int(0)
	if a[1] == 0 || pid < 0 {
		return 0, unix.EINVAL
	}
	target, err := schedTarget(t, pid)
	if err != nil {
		return 0, err
	}
	return 0, copyOutU32(t, a.Ptr(1), uint32(target.Sched().Priority))
}

// SchedGetPriorityMax implements Linux syscall sched_get_priority_max(2).
func SchedGetPriorityMax(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	switch p := int(a.Int(0)); {
	case rtPolicy(p):
		return maxRTPriority, nil
	case validPolicy(p):
		return 0, nil
	}
	return 0, unix.EINVAL
}

// SchedGetPriorityMin implements Linux syscall sched_get_priority_min(2).
func SchedGetPriorityMin(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	switch p := int(a.Int(0)); {
	case rtPolicy(p):
		return 1, nil
	case validPolicy(p):
		return 0, nil
	}
	return 0, unix.EINVAL
}

// rrTimeslice is SCHED_RR's time slice, Linux's default
// sched_rr_timeslice_ms (RR_TIMESLICE).
const rrTimeslice = 100 * time.Millisecond

// SchedRrGetInterval implements Linux syscall sched_rr_get_interval(2):
// SCHED_RR's time slice; 0 for the other policies, as Linux gives at
// HZ=250, where a fair thread's slice is less than a tick.
func SchedRrGetInterval(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	pid := a.Int(0)
	if pid < 0 {
		return 0, unix.EINVAL
	}
	target, err := schedTarget(t, pid)
	if err != nil {
		return 0, err
	}
	var d time.Duration
	if target.Sched().Policy == unix.SCHED_RR {
		d = rrTimeslice
	}
	ts := unix.NsecToTimespec(int64(d))
	return 0, copyOutStruct(t, a.Ptr(1), &ts)
}

// struct sched_attr sizes: SCHED_ATTR_SIZE_VER0 (without the utilization
// clamps) and the kernel's own, which is unix.SizeofSchedAttr.
const schedAttrSizeVer0 = 48

// SchedSetattr implements Linux syscall sched_setattr(2). The size the
// caller gives is checked as copy_struct_from_user does: too small or
// past a page, or with non-zero bytes beyond the kernel's structure, is
// E2BIG, with the kernel's size written back. Utilization clamps answer
// EOPNOTSUPP, as a kernel built without CONFIG_UCLAMP_TASK does.
func SchedSetattr(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	pid, addr, flags := a.Int(0), a.Ptr(1), a[2]
	if addr == 0 || pid < 0 || flags != 0 {
		return 0, unix.EINVAL
	}
	var size uint32
	if err := copyInStruct(t, addr, &size); err != nil {
		return 0, err
	}
	if size == 0 {
		size = schedAttrSizeVer0
	}
	tooBig := func() (uintptr, error) {
		if err := copyOutU32(t, addr, unix.SizeofSchedAttr); err != nil {
			return 0, err
		}
		return 0, unix.E2BIG
	}
	if size < schedAttrSizeVer0 || size > mm.PageSize {
		return tooBig()
	}
	buf := make([]byte, size)
	if _, err := t.CopyIn(addr, buf); err != nil {
		return 0, err
	}
	for _, b := range buf[min(size, unix.SizeofSchedAttr):] {
		if b != 0 {
			return tooBig()
		}
	}
	var attr unix.SchedAttr
	copy(bytesOf(&attr), buf)
	if attr.Flags&^unix.SCHED_FLAG_ALL != 0 {
		return 0, unix.EINVAL
	}
	if attr.Flags&unix.SCHED_FLAG_UTIL_CLAMP != 0 {
		if size < unix.SizeofSchedAttr {
			return 0, unix.EINVAL
		}
		return 0, unix.EOPNOTSUPP
	}
	if int32(attr.Policy) < 0 {
		return 0, unix.EINVAL
	}
	target, err := schedTarget(t, pid)
	if err != nil {
		return 0, err
	}
	c := schedChange{policy: int(attr.Policy), priority: int(attr.Priority), nice: min(max(int(attr.Nice), -20), 19),
		setNice: true, resetOnFork: attr.Flags&unix.SCHED_FLAG_RESET_ON_FORK != 0,
		runtime: attr.Runtime, deadline: attr.Deadline, period: attr.Period}
	if attr.Flags&unix.SCHED_FLAG_KEEP_POLICY != 0 {
		c.policy = keepPolicy
	} else if !validPolicy(c.policy) {
		return 0, unix.EINVAL
	}
	if attr.Flags&unix.SCHED_FLAG_KEEP_PARAMS != 0 {
		s := target.Sched()
		c.priority, c.runtime, c.deadline, c.period = s.Priority, s.Runtime, s.Deadline, s.Period
	}
	return 0, setScheduler(t, target, c)
}

// SchedGetattr implements Linux syscall sched_getattr(2): the structure,
// cut to the caller's size, with its size field the smaller of the two.
func SchedGetattr(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	pid, addr, size, flags := a.Int(0), a.Ptr(1), a.Uint(2), a[3]
	if addr == 0 || pid < 0 || size < schedAttrSizeVer0 || size > mm.PageSize || flags != 0 {
		return 0, unix.EINVAL
	}
	target, err := schedTarget(t, pid)
	if err != nil {
		return 0, err
	}
	s := target.Sched()
	attr := unix.SchedAttr{Size: uint32(min(size, unix.SizeofSchedAttr)), Policy: uint32(s.Policy),
		Nice: int32(s.Nice), Priority: uint32(s.Priority), Runtime: s.Runtime, Deadline: s.Deadline, Period: s.Period}
	if s.ResetOnFork {
		attr.Flags |= unix.SCHED_FLAG_RESET_ON_FORK
	}
	_, err = t.CopyOut(addr, bytesOf(&attr)[:attr.Size])
	return 0, err
}

// cpuMaskBytes is the size of the CPU masks the affinity calls exchange:
// the sandbox's CPUs, in whole words.
func cpuMaskBytes(t *kernel.Task) int { return (t.Kernel().NumCPUs() + 63) / 64 * 8 }

// SchedSetaffinity implements Linux syscall sched_setaffinity(2): the
// mask is cut to the sandbox's CPUs, and one with none of them left is
// EINVAL. A shorter mask than the sandbox's leaves the CPUs past it out.
func SchedSetaffinity(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	pid, size := a.Int(0), int(a.Uint(1))
	buf := make([]byte, cpuMaskBytes(t))
	if _, err := t.CopyIn(a.Ptr(2), buf[:min(size, len(buf))]); err != nil {
		return 0, err
	}
	target, err := schedTarget(t, pid)
	if err != nil {
		return 0, err
	}
	if !t.SameOwner(target) && !t.Capable(unix.CAP_SYS_NICE) {
		return 0, unix.EPERM
	}
	set := make(kernel.CPUSet, len(buf)/8)
	for i := range set {
		for b := 0; b < 8; b++ {
			set[i] |= uint64(buf[i*8+b]) << (8 * b)
		}
	}
	set = set.Intersect(t.Kernel().AllCPUs())
	if set.Empty() {
		return 0, unix.EINVAL
	}
	return 0, target.UpdateSched(func(s *kernel.Sched) error {
		s.Affinity = set
		return nil
	})
}

// SchedGetaffinity implements Linux syscall sched_getaffinity(2): the
// CPUs the thread may use. The size must hold every CPU of the sandbox
// and be whole words; the call returns how many bytes it wrote.
func SchedGetaffinity(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	pid, size := a.Int(0), a.Uint(1)
	if uint64(size)*8 < uint64(t.Kernel().NumCPUs()) || size%8 != 0 {
		return 0, unix.EINVAL
	}
	target, err := schedTarget(t, pid)
	if err != nil {
		return 0, err
	}
	set := target.CPUs()
	mask := make([]byte, cpuMaskBytes(t))
	for i := range mask {
		mask[i] = byte(set[i/8] >> (8 * (i % 8)))
	}
	if _, err := t.CopyOut(a.Ptr(2), mask); err != nil {
		return 0, err
	}
	return uintptr(len(mask)), nil
}

// I/O priority: class << IOPRIO_CLASS_SHIFT | level, the level in the
// low three bits.
func ioprioClass(v int) int { return v >> linuxabi.IOPRIO_CLASS_SHIFT & 7 }
func ioprioLevel(v int) int { return v & 7 }

// effectiveIOPrio is the I/O priority a thread's I/O gets: the one it
// set, or for class none the one its scheduling implies (Linux's
// __get_task_ioprio): the real-time class under a real-time policy, idle
// under SCHED_IDLE, best effort otherwise, at the level its nice value
// gives.
func effectiveIOPrio(s kernel.Sched) int {
	if ioprioClass(s.IOPrio) != linuxabi.IOPRIO_CLASS_NONE {
		return s.IOPrio
	}
	class := linuxabi.IOPRIO_CLASS_BE
	switch {
	case rtPolicy(s.Policy):
		class = linuxabi.IOPRIO_CLASS_RT
	case s.Policy == unix.SCHED_IDLE:
		class = linuxabi.IOPRIO_CLASS_IDLE
	}
	return class<<linuxabi.IOPRIO_CLASS_SHIFT | (s.Nice+20)/5
}

// ioprioTargets are the threads ioprio_get and ioprio_set act on; who is
// as for getpriority, with IOPRIO_WHO_* numbering.
func ioprioTargets(t *kernel.Task, which int, who int32) ([]*kernel.Task, error) {
	switch which {
	case linuxabi.IOPRIO_WHO_PROCESS:
		return priorityTargets(t, unix.PRIO_PROCESS, who)
	case linuxabi.IOPRIO_WHO_PGRP:
		return priorityTargets(t, unix.PRIO_PGRP, who)
	case linuxabi.IOPRIO_WHO_USER:
		return priorityTargets(t, unix.PRIO_USER, who)
	}
	return nil, unix.EINVAL
}

// IoprioGet implements Linux syscall ioprio_get(2). One thread's is what
// it set (0 if nothing); for a process group or a user it is the best of
// the threads' effective priorities.
func IoprioGet(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	which := int(a.Int(0))
	targets, err := ioprioTargets(t, which, a.Int(1))
	if err != nil {
		return 0, err
	}
	if len(targets) == 0 {
		return 0, unix.ESRCH
	}
	if which == linuxabi.IOPRIO_WHO_PROCESS {
		return uintptr(targets[0].Sched().IOPrio), nil
	}
	best := -1
	for _, x := range targets {
		if v := effectiveIOPrio(x.Sched()); best < 0 || v < best {
			best = v
		}
	}
	return uintptr(best), nil
}

// IoprioSet implements Linux syscall ioprio_set(2). The real-time class
// needs CAP_SYS_NICE (or CAP_SYS_ADMIN), class none takes no level, and a
// thread of another user needs CAP_SYS_NICE; the loop over several
// threads stops at the first refusal.
func IoprioSet(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	which, who, prio := int(a.Int(0)), a.Int(1), int(a.Int(2))
	switch ioprioClass(prio) {
	case linuxabi.IOPRIO_CLASS_RT:
		if !t.Capable(unix.CAP_SYS_ADMIN) && !t.Capable(unix.CAP_SYS_NICE) {
			return 0, unix.EPERM
		}
	case linuxabi.IOPRIO_CLASS_BE, linuxabi.IOPRIO_CLASS_IDLE:
	case linuxabi.IOPRIO_CLASS_NONE:
		if ioprioLevel(prio) != 0 {
			return 0, unix.EINVAL
		}
	default:
		return 0, unix.EINVAL
	}
	targets, err := ioprioTargets(t, which, who)
	if err != nil {
		return 0, err
	}
	if len(targets) == 0 {
		return 0, unix.ESRCH
	}
	myIDs := t.IDs()
	for _, x := range targets {
		if uid := x.IDs().UID; uid != myIDs.EUID && uid != myIDs.UID && !t.Capable(unix.CAP_SYS_NICE) {
			return 0, unix.EPERM
		}
		x.UpdateSched(func(s *kernel.Sched) error {
			s.IOPrio = prio & 0xffff
			return nil
		})
	}
	return 0, nil
}

// bytesOf is the memory of *p as bytes, for structures copied in part.
func bytesOf[T any](p *T) []byte { return unsafe.Slice((*byte)(unsafe.Pointer(p)), unsafe.Sizeof(*p)) }
