package systrap

import (
	"math"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/platform"
)

// spinPause executes one PAUSE instruction.
func spinPause()

// rdtsc reads the time-stamp counter.
func rdtsc() uint64

// guestSpinIters and requestSpinIters are how many polls the sentry makes
// before it sleeps, waiting for a guest thread and for a syscall thread;
// set by calibrateSpin.
var (
	longSpinIters    = 20000
	guestSpinIters   = 2000
	requestSpinIters = 8000
	calibrateOnce    sync.Once
)

// The sentry's spin budgets. A futex wake-up costs more than a spin of the
// budget, and far more when the sleeper's CPU has gone idle (a nested VM;
// docs/SPECIFICATION.md has the costs), so a hand-off that comes within the
// budget is served cheaper by spinning. A guest thread may compute for long, and then the sleep is
// paid once; a syscall thread's request takes a few microseconds once the
// thread runs, and it was woken when the first change was queued (queue), so
// it is worth waiting longer for.
const (
	guestSpinTime   = 40 * time.Microsecond
	longSpinTime    = time.Millisecond
	requestSpinTime = 200 * time.Microsecond
)

// sleepTimeout bounds a futex sleep, as a safety net behind the reaper's
// explicit wake-ups.
var sleepTimeout = unix.NsecToTimespec(int64(100 * time.Millisecond))

// pauseTime is what one PAUSE takes here (from 1 ns to over 100 ns across
// CPU models), measured by calibrateSpin.
var pauseTime = 20 * time.Nanosecond

// yieldSlowTicks is how many TSC ticks make a sched_yield slow: one that
// gave the CPU to another process for its slice (milliseconds), not to a
// thread of this sandbox for a few microseconds. Set by calibrateSpin.
var yieldSlowTicks = uint64(1 << 62)

const yieldSlowTime = 200 * time.Microsecond

// cpuCheckTicks is how many TSC ticks of guest code make the handler read
// its thread's CPU clock at the next trap (platform.RunningVouched). Set by
// calibrateSpin.
var cpuCheckTicks = uint64(1 << 62)

// tscPerNano is the time-stamp counter's rate (float64 bits): a first
// estimate from calibrateSpin, then one over a second (refineTSCRate),
// precise enough that a guest's CPU time does not exceed the time elapsed.
var tscPerNano atomic.Uint64

// ticksToDuration converts a count of TSC ticks to time.
func ticksToDuration(ticks uint64) time.Duration {
	return time.Duration(float64(ticks) / math.Float64frombits(tscPerNano.Load()))
}

// refineTSCRate measures the TSC's rate over a second from start.
func refineTSCRate(start time.Time, tsc uint64) {
	time.Sleep(time.Second)
	elapsed, ticks := time.Since(start), rdtsc()-tsc
	tscPerNano.Store(math.Float64bits(float64(ticks) / float64(elapsed)))
}

func calibrateSpin() {
	const n = 2000
	start, tsc := time.Now(), rdtsc()
	for i := 0; i < n; i++ {
		spinPause()
	}
	elapsed, ticks := time.Since(start), rdtsc()-tsc
	if per := elapsed / n; per > 0 {
		pauseTime = per
	}
	rate := 1.0
	if elapsed > 0 && ticks > 0 {
		rate = float64(ticks) / float64(elapsed)
	}
	tscPerNano.Store(math.Float64bits(rate))
	yieldSlowTicks = uint64(rate * float64(yieldSlowTime))
	cpuCheckTicks = uint64(rate * float64(platform.RunningVouched))
	go refineTSCRate(start, tsc)
	guestSpinIters = spinIters(guestSpinTime)
	longSpinIters = spinIters(longSpinTime)
	requestSpinIters = spinIters(requestSpinTime)
}

// Waiting for a guest thread, the first maxLongSpinners waiters spin for
// longSpinTime, the others for guestSpinTime. A guest computes between two
// system calls for tens to hundreds of microseconds (docs/SPECIFICATION.md),
// and a futex wake-up costs about as much, paid at every call. One long
// spinner per two CPUs keeps one thread's hand-offs fast and bounds the CPU
// spent on spinning; its yields give the CPU to any other runnable thread.
// The first maxSpinningStubs waiters' stubs spin for their resume, the
// others' sleep at once (Switch). Both follow the CPUs the sandbox may use
// (LimitCPUs): a sandbox with a quota of one CPU spins on one.
var (
	maxLongSpinners  atomic.Int32
	maxSpinningStubs atomic.Int32
	longSpinners     atomic.Int32 // sentry threads now waiting for a guest thread
)

func init() { limitSpinners(runtime.NumCPU()) }

// limitSpinners sizes the spinners for n CPUs.
func limitSpinners(n int) {
	maxLongSpinners.Store(int32(max(n/2, 1)))
	maxSpinningStubs.Store(int32(max(n, 1)))
}

// LimitCPUs implements platform.CPULimiter. The spinners are the
// process's: a sentry has one platform.
func (p *Platform) LimitCPUs(n int) { limitSpinners(min(n, runtime.NumCPU())) }

// A spinning sentry thread yields its CPU every yieldEvery polls (about a
// microsecond) and its Go P every goschedEvery polls (tens of microseconds).
const (
	yieldEvery   = 64
	goschedEvery = 1024
)

// spinIters is how many PAUSEs take about d, at least 100.
func spinIters(d time.Duration) int {
	return max(int(d/pauseTime), 100)
}

// waitFor waits until *word == want, spinning first and then sleeping on the
// futex after spin polls. While asleep it sets *sleeping, which tells the
// other side to wake it. It returns false if dead becomes true first.
func waitFor(word *uint32, want uint32, sleeping *uint32, dead *atomic.Bool, spin int) bool {
	ok, _ := wait(word, want, sleeping, dead, spin)
	return ok
}

// wait is waitFor, also reporting what its spin found (spinpolicy.go).
func wait(word *uint32, want uint32, sleeping *uint32, dead *atomic.Bool, spin int) (bool, spinOutcome) {
	yield := true
	outcome := spinMiss
	last := rdtsc()
	for i := 1; i <= spin; i++ {
		if atomic.LoadUint32(word) == want {
			if outcome == spinMiss {
				outcome = spinHit
			}
			return true, outcome
		}
		spinPause()
		if i%yieldEvery == 0 {
			// yieldEvery polls take microseconds: a gap of a slow
			// yield's length means the host preempted this spin.
			t := rdtsc()
			if t-last >= yieldSlowTicks {
				outcome = spinContended
			}
			last = t
			if yield {
				// With few CPUs, the thread this one waits for may have
				// been woken on this CPU: let it run (the stub's spins do
				// the same). A slow yield means other processes keep the
				// CPUs busy and each yield costs a slice of theirs: spin
				// on without.
				unix.RawSyscall(unix.SYS_SCHED_YIELD, 0, 0, 0)
				last = rdtsc()
				if last-t >= yieldSlowTicks {
					yield = false
					outcome = spinContended
				}
			}
		}
		if i%goschedEvery == 0 {
			// A goroutine made runnable meanwhile (a task whose wait just
			// ended) must not wait for this spin to end for a P. Rarely:
			// a trip through the Go scheduler costs more than a whole
			// guest system call (every 64 polls made getppid several
			// times slower: docs/SPECIFICATION.md).
			runtime.Gosched()
			last = rdtsc()
		}
	}
	if spin == 0 {
		outcome = spinHit // nothing was tried, nothing learnt
	}
	for {
		atomic.StoreUint32(sleeping, 1) // an exchange: ordered before the load below
		cur := atomic.LoadUint32(word)
		if cur == want {
			atomic.StoreUint32(sleeping, 0)
			return true, outcome
		}
		if dead.Load() {
			atomic.StoreUint32(sleeping, 0)
			return false, outcome
		}
		futexWait(word, cur, &sleepTimeout)
		atomic.StoreUint32(sleeping, 0)
		if atomic.LoadUint32(word) == want {
			return true, outcome
		}
	}
}

// futexWait sleeps while *word == val. The word is in shared memory, so the
// futex is a shared one (no FUTEX_PRIVATE_FLAG).
func futexWait(word *uint32, val uint32, timeout *unix.Timespec) {
	unix.Syscall6(unix.SYS_FUTEX, uintptr(unsafe.Pointer(word)), futexWaitOp, uintptr(val),
		uintptr(unsafe.Pointer(timeout)), 0, 0)
}

// futexWake wakes one waiter on word.
func futexWake(word *uint32) {
	unix.RawSyscall6(unix.SYS_FUTEX, uintptr(unsafe.Pointer(word)), futexWakeOp, 1, 0, 0, 0)
}

// publish stores val in *word and wakes the other side if it sleeps.
func publish(word *uint32, val uint32, otherSleeping *uint32) {
	atomic.StoreUint32(word, val) // an exchange: ordered before the load below
	if atomic.LoadUint32(otherSleeping) != 0 {
		futexWake(word)
	}
}
