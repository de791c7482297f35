package kernel

import (
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/internal/linuxabi"
)

// cpuLimit enforces RLIMIT_CPU, as Linux does: when the process's CPU time
// reaches the soft limit it gets SIGXCPU, and the soft limit moves up a
// second (so the next SIGXCPU comes a second of CPU later); at the hard
// limit it gets SIGKILL. Like the CPU-time itimers it waits on a
// wall-clock timer for what is left, then looks at the CPU time.
type cpuLimit struct {
	mu    sync.Mutex
	timer *time.Timer // nil while both limits are infinite
}

// limitTime is a limit in seconds as time, or -1 for no limit.
func limitTime(v uint64) time.Duration {
	if v == Infinity || v > uint64(time.Duration(1<<62)/time.Second) {
		return -1
	}
	return time.Duration(v) * time.Second
}

// SetLimit changes limit r of the process (setrlimit, prlimit64).
func (tg *ThreadGroup) SetLimit(r int, v Limit, privileged bool) (Limit, error) {
	old, err := tg.limits.Set(r, v, privileged)
	if err == nil && r == unix.RLIMIT_CPU {
		tg.checkCPULimit()
	}
	return old, err
}

// checkCPULimit signals the process if its CPU time has reached a limit,
// and sets the timer for the next look.
func (tg *ThreadGroup) checkCPULimit() {
	c := &tg.cpuLimit
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.timer != nil {
		c.timer.Stop()
		c.timer = nil
	}
	tg.mu.Lock()
	over := tg.exiting
	tg.mu.Unlock()
	if over {
		return
	}
	l := tg.limits.Get(unix.RLIMIT_CPU)
	soft, hard := limitTime(l.Cur), limitTime(l.Max)
	if soft < 0 && hard < 0 {
		return
	}
	user, sys := tg.CPUTime()
	used := user + sys
	if hard >= 0 && used >= hard {
		tg.SendSignal(SigInfo{Signo: int32(unix.SIGKILL), Code: linuxabi.SI_KERNEL})
		return
	}
	if soft >= 0 && used >= soft {
		tg.SendSignal(SigInfo{Signo: int32(unix.SIGXCPU), Code: linuxabi.SI_KERNEL})
		if l.Cur < l.Max {
			tg.limits.Set(unix.RLIMIT_CPU, Limit{l.Cur + 1, l.Max}, false)
		}
		soft += time.Second
	}
	next := hard
	if soft >= 0 && (next < 0 || soft < next) {
		next = soft
	}
	c.timer = time.AfterFunc(max(next-used, cpuTimerRecheck), tg.checkCPULimit)
}

// stop disarms the limit's timer (the process is gone).
func (c *cpuLimit) stop() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.timer != nil {
		c.timer.Stop()
		c.timer = nil
	}
}
