package kernel

import (
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/internal/linuxabi"
	"github.com/moat-sandbox/moat/sentry/mm"
)

// The sandbox's memory controller: what Linux's memory cgroup does for a
// container, done by the sentry for its guest. The charge is the memory
// file's (memfile.Charged): every page of guest memory lives there, and
// the host allocates a page when the guest first touches it, in a fault
// the host serves without the sentry. So the sentry cannot refuse one
// page fault as a memory cgroup refuses a charge; instead a watcher reads
// the charge (one fstat), often enough that the guest cannot get far past
// the limit between two looks, and when it is over, kills a process as
// the memory cgroup's OOM killer would. The host cgroup around the
// sandbox is the backstop for what a look comes too late for.

// memFillRate bounds how fast a guest can make memory resident (bytes per
// millisecond, all its threads together): the watcher looks again before
// the room left under the limit could be filled at that rate.
const memFillRate = 8 << 20

// The watcher's interval between looks: never shorter than memPollMin
// (one look costs a system call), never longer than memPollMax.
const (
	memPollMin = time.Millisecond
	memPollMax = 100 * time.Millisecond
)

// oomReclaimWait bounds how long the OOM killer waits, after its victim
// has gone, for the victim's pages to be zeroed and returned (memfile's
// Free is asynchronous) before it judges the charge again.
const oomReclaimWait = 100 * time.Millisecond

// memCgroup is the sandbox's memory controller state.
type memCgroup struct {
	peak atomic.Uint64 // memory.peak: the highest charge seen
	// memory.events: oom counts the times the charge was found over the
	// limit with no kill under way, oomKill the processes killed.
	oom, oomKill atomic.Uint64
	initKilled   atomic.Bool // init was the OOM killer's victim

	// Only the watcher goroutine touches these.
	victim     *ThreadGroup // the last process killed, until its memory is gone
	victimGone time.Time    // when the victim became a zombie
	noVictim   bool         // the last look found no process to kill (logged once)
}

// MemoryEvents are the counters of memory.events.
type MemoryEvents struct {
	OOM, OOMKill uint64
}

// MemoryCurrent is memory.current: the bytes of guest memory charged now.
func (k *Kernel) MemoryCurrent() uint64 { return k.MemFile.Charged() }

// MemoryPeak is memory.peak.
func (k *Kernel) MemoryPeak() uint64 { return max(k.mem.peak.Load(), k.MemoryCurrent()) }

// MemoryEvents returns memory.events' OOM counters.
func (k *Kernel) MemoryEvents() MemoryEvents {
	return MemoryEvents{OOM: k.mem.oom.Load(), OOMKill: k.mem.oomKill.Load()}
}

// MemoryView is the memory the guest is told it has (/proc/meminfo,
// sysinfo(2)) under a memory limit: the limit, and what the charge leaves
// of it. ok is false without a limit: the guest then sees the host's.
func (k *Kernel) MemoryView() (total, free uint64, ok bool) {
	limit := k.SandboxLimits().MemoryMax
	if limit == 0 {
		return 0, 0, false
	}
	return limit, limit - min(k.MemoryCurrent(), limit), true
}

// InitOOMKilled reports whether the OOM killer killed init: the
// container then ends with 137 and an OOM event, as under runc.
func (k *Kernel) InitOOMKilled() bool { return k.mem.initKilled.Load() }

// watchMemory runs until the sandbox ends, looking at the charge while a
// memory limit is set and waiting for one otherwise.
func (k *Kernel) watchMemory() {
	timer := time.NewTimer(memPollMax)
	defer timer.Stop()
	for {
		wait := time.Duration(-1)
		if limit := k.SandboxLimits().MemoryMax; limit != 0 {
			wait = k.lookAtMemory(limit)
		}
		var tick <-chan time.Time
		if wait >= 0 {
			timer.Reset(wait)
			tick = timer.C
		}
		select {
		case <-k.done:
			return
		case <-k.sbLimits.wake:
		case <-tick:
		}
	}
}

// lookAtMemory compares the charge with the limit, runs the OOM killer if
// it is over, and returns when to look again.
func (k *Kernel) lookAtMemory(limit uint64) time.Duration {
	cur := k.MemoryCurrent()
	for {
		old := k.mem.peak.Load()
		if cur <= old || k.mem.peak.CompareAndSwap(old, cur) {
			break
		}
	}
	if cur <= limit {
		k.mem.noVictim = false
		if k.mem.victim != nil && k.victimMemoryGone() {
			k.mem.victim = nil
		}
		return min(max(time.Duration((limit-cur)/memFillRate)*time.Millisecond, memPollMin), memPollMax)
	}
	k.outOfMemory(limit)
	return memPollMin
}

// victimMemoryGone reports whether the last victim's memory has gone
// back: the process has ended (its address space released) and the memory
// file has zeroed what it freed, or has had oomReclaimWait to.
func (k *Kernel) victimMemoryGone() bool {
	v := k.mem.victim
	k.treeMu.Lock()
	gone := v.zombie
	k.treeMu.Unlock()
	if !gone {
		return false
	}
	if k.mem.victimGone.IsZero() {
		k.mem.victimGone = time.Now()
	}
	return !k.MemFile.Reclaiming() || time.Since(k.mem.victimGone) >= oomReclaimWait
}

// outOfMemory is the memory cgroup's OOM killer, run with the charge over
// limit: while a victim's memory is still going, it waits (Linux's
// "OOM in progress"); otherwise it kills the process of highest badness
// with SIGKILL. If every process is spared (oom_score_adj -1000), nothing
// is killed and the guest stays over its limit: Linux's charge would fail
// and its fault retry, here the host cgroup's limit is what holds it.
func (k *Kernel) outOfMemory(limit uint64) {
	if k.mem.victim != nil {
		if !k.victimMemoryGone() {
			return
		}
		k.mem.victim = nil
		if k.MemoryCurrent() <= limit {
			return
		}
	}
	k.mem.oom.Add(1)
	victim, points := k.chooseOOMVictim(limit / mm.PageSize)
	if victim == nil {
		if !k.mem.noVictim {
			k.Log("memory: out of memory (%d bytes charged, limit %d) and no process may be killed", k.MemoryCurrent(), limit)
		}
		k.mem.noVictim = true
		return
	}
	k.mem.victim, k.mem.victimGone = victim, time.Time{}
	k.mem.oomKill.Add(1)
	k.treeMu.Lock()
	isInit := victim == k.init
	k.treeMu.Unlock()
	if isInit {
		k.mem.initKilled.Store(true)
	}
	k.Log("memory: out of memory: killed process %d (%s), badness %d, oom_score_adj %d, limit %d bytes",
		victim.pid, victim.comm(), points, victim.OOMScoreAdj(), limit)
	victim.SendSignal(SigInfo{Signo: int32(unix.SIGKILL), Code: linuxabi.SI_KERNEL})
}

// chooseOOMVictim returns the process Linux's memory cgroup OOM killer
// would pick among the sandbox's, with totalPages the limit in pages: the
// highest badness, a later process winning a tie as Linux's scan lets the
// last of equals replace the one chosen; nil if every one is spared.
func (k *Kernel) chooseOOMVictim(totalPages uint64) (*ThreadGroup, int64) {
	var chosen *ThreadGroup
	var best int64
	for _, tg := range k.ThreadGroups() {
		tg.mu.Lock()
		exiting := tg.exiting
		tg.mu.Unlock()
		if exiting {
			continue // going already: its memory is on its way back
		}
		points, ok := tg.Badness(totalPages)
		if ok && (chosen == nil || points >= best) {
			chosen, best = tg, points
		}
	}
	return chosen, best
}

// comm is the name of the process's first living task.
func (tg *ThreadGroup) comm() string {
	if t := tg.Leader(); t != nil {
		return t.Comm()
	}
	return ""
}
