package kernel

import (
	"sync"
	"time"
)

// What the guest can make the kernel log (a failed exec, an OOM kill, a
// call its seccomp filter logs, a refused clone) it can make it log in a
// loop, and the log is a file of the host's. Like Linux's printk_ratelimit
// (a burst of 10 per 5 s), the kernel passes at most logBurst lines per
// logInterval to Config.Log and then says how many it left out.
const (
	logInterval = 5 * time.Second
	logBurst    = 100
)

// logLimiter is Config.Log behind that limit.
type logLimiter struct {
	out func(format string, args ...any)
	now func() time.Time

	mu      sync.Mutex
	start   time.Time // of the current interval
	passed  int       // lines passed in it
	dropped int       // lines left out in it
}

func (l *logLimiter) log(format string, args ...any) {
	l.mu.Lock()
	now := l.now()
	var dropped int
	if now.Sub(l.start) >= logInterval {
		dropped = l.dropped
		l.start, l.passed, l.dropped = now, 0, 0
	}
	pass := l.passed < logBurst
	if pass {
		l.passed++
	} else {
		l.dropped++
	}
	l.mu.Unlock()
	if dropped > 0 {
		l.out("%d more lines were not logged (at most %d per %v)", dropped, logBurst, logInterval)
	}
	if pass {
		l.out(format, args...)
	}
}
