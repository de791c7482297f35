package systrap

import (
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// spinPause executes one PAUSE instruction.
func spinPause()

// sentrySpinIters is how many polls the sentry makes before it sleeps; set
// by calibrateSpin to about sentrySpinTime.
var (
	sentrySpinIters = 2000
	calibrateOnce   sync.Once
)

// sentrySpinTime bounds the sentry's spin. A futex wake-up costs about 11 µs
// here (half of a 22 µs ping-pong), so a hand-off that comes within this time
// is served cheaper by spinning; a longer one (a guest computing, or blocked)
// pays the sleep once.
const sentrySpinTime = 40 * time.Microsecond

// sleepTimeout bounds a futex sleep, as a safety net behind the reaper's
// explicit wake-ups.
var sleepTimeout = unix.NsecToTimespec(int64(100 * time.Millisecond))

func calibrateSpin() {
	const n = 2000
	start := time.Now()
	for i := 0; i < n; i++ {
		spinPause()
	}
	per := time.Since(start) / n
	if per <= 0 {
		per = time.Nanosecond
	}
	iters := int(sentrySpinTime / per)
	if iters < 100 {
		iters = 100
	}
	sentrySpinIters = iters
}

// waitFor waits until *word == want, spinning first and then sleeping on the
// futex. While asleep it sets *sleeping, which tells the other side to wake
// it. It returns false if dead becomes true first.
func waitFor(word *uint32, want uint32, sleeping *uint32, dead *atomic.Bool) bool {
	for i := 0; i < sentrySpinIters; i++ {
		if atomic.LoadUint32(word) == want {
			return true
		}
		spinPause()
	}
	for {
		atomic.StoreUint32(sleeping, 1) // an exchange: ordered before the load below
		cur := atomic.LoadUint32(word)
		if cur == want {
			atomic.StoreUint32(sleeping, 0)
			return true
		}
		if dead.Load() {
			atomic.StoreUint32(sleeping, 0)
			return false
		}
		futexWait(word, cur, &sleepTimeout)
		atomic.StoreUint32(sleeping, 0)
		if atomic.LoadUint32(word) == want {
			return true
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
