package vdso

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The time the vDSO tells is a straight line from the TSC:
//
//	ns = base + ((tsc - tscBase) * mult) >> lineShift
//
// which the sentry re-draws every updateInterval from the host's clocks. A
// new line starts where the old one is at the moment it is published, so the
// guest's monotonic clock never steps back; its slope is the TSC rate
// observed against the host's CLOCK_MONOTONIC over the last interval, plus a
// slew that brings the line back onto the host clock by the next update.
// Between updates the line is a few microseconds at most from the host clock
// the sentry's own clock_gettime reads (see TestPrecision).

const (
	// updateInterval is how often Start re-draws the line.
	updateInterval = time.Second

	// maxSlew bounds the slope correction, relative to the rate: the most
	// the line runs fast or slow to catch up with the host clock (Linux's
	// NTP slews at most 500 ppm). An error larger than one interval can
	// absorb is stepped over when the line is behind, and slewed away at
	// this rate when it is ahead: the monotonic clock never steps back.
	maxSlew = 500e-6

	// maxRateError is how far the rate observed over one interval may be
	// from the calibrated one before the TSC is taken to have misbehaved
	// (jumped, as after a host suspend or a migration): then the line is
	// re-drawn from the host clock and the calibrated rate.
	maxRateError = 0.01
)

// Params is the writer of one sandbox's parameter page.
type Params struct {
	mem        []byte // ParamsSize bytes of the memory file
	monoOffset int64  // guest CLOCK_MONOTONIC = host CLOCK_MONOTONIC + monoOffset

	mu     sync.Mutex
	forced bool    // SetFallback: every call traps
	have   bool    // cur and prev are valid
	cur    line    // the published line, in host CLOCK_MONOTONIC nanoseconds
	prev   sample  // the host observation of the last update
	rate   float64 // host CLOCK_MONOTONIC ns per TSC tick, as last observed

	realOff int64 // test hook: added to CLOCK_REALTIME
}

// NewParams returns the writer of the parameter page in mem (at least
// ParamsSize bytes, page aligned: the memory-file pages the guests map). The
// guest's CLOCK_MONOTONIC (and BOOTTIME, MONOTONIC_RAW, MONOTONIC_COARSE) is
// the host's CLOCK_MONOTONIC plus monotonicOffset; for moat's kernel that is
// bootClockOffset - bootMono (1 s at boot). CLOCK_REALTIME is the host's.
//
// The page starts out telling the vDSO to trap for everything, which is
// correct but slow; the first Update (or Start) switches it to the TSC.
func NewParams(mem []byte, monotonicOffset int64) *Params {
	if len(mem) < ParamsSize {
		panic(fmt.Sprintf("vdso: parameter area of %d bytes, want %d", len(mem), ParamsSize))
	}
	if uintptr(unsafe.Pointer(&mem[0]))%8 != 0 {
		panic("vdso: parameter area not aligned")
	}
	p := &Params{mem: mem[:ParamsSize], monoOffset: monotonicOffset}
	p.publish(0, line{}, 0, 0)
	return p
}

// Update re-draws the line from the host's clocks and the TSC: called at
// start and then about every second (Start does), to follow drift and NTP
// slew. The first call in a process calibrates the TSC, which takes about
// 20 ms.
func (p *Params) Update() { p.update(updateInterval) }

// Start updates the page now and then every second, on a goroutine, until
// stop is closed. The first updates come sooner (after 100 ms and 400 ms) so
// the calibration's small error is corrected early.
func (p *Params) Start(stop <-chan struct{}) {
	go func() {
		steps := []time.Duration{100 * time.Millisecond, 300 * time.Millisecond}
		next := func() time.Duration {
			if len(steps) == 0 {
				return updateInterval
			}
			d := steps[0]
			steps = steps[1:]
			return d
		}
		d := next()
		p.update(d)
		t := time.NewTimer(d)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				d = next()
				p.update(d)
				t.Reset(d)
			}
		}
	}()
}

// SetFallback makes every vDSO call trap into the sentry (on) or lets it use
// the TSC again at the next Update (off). For debugging and for hosts whose
// TSC the sentry should not trust.
func (p *Params) SetFallback(on bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.forced = on
	p.have = false
	if on {
		p.publish(0, line{}, 0, 0)
	}
}

// TrapGetcpu makes the vDSO's getcpu trap into the sentry from now on.
// Until then it answers CPU 0 on node 0 in the guest, which is right while
// every thread's CPU is 0 (kernel.Task.CPU: the lowest of its affinity);
// the kernel calls this once a thread's affinity leaves CPU 0 out, and the
// page has no per-thread answer to give. It is never undone: a later
// affinity that holds CPU 0 again still answers right through the trap.
func (p *Params) TrapGetcpu() {
	if p.load32(paramCPUTrap) == 0 {
		p.store32(paramCPUTrap, 1)
	}
}

// Now returns the guest's CLOCK_MONOTONIC and CLOCK_REALTIME in nanoseconds,
// read exactly as the vDSO reads them (or from the host clocks when the page
// says to trap). A sentry that answers clock_gettime and friends with it
// never gives the guest a time earlier than one the vDSO already gave.
func (p *Params) Now() (mono, real int64) {
	for i := 0; i < 1000; i++ {
		seq := p.load64(paramSeq)
		if seq&1 != 0 {
			continue
		}
		flags := p.load32(paramFlags)
		shift := p.load32(paramShift)
		l := line{tsc: p.load64(paramTSCBase), mult: p.load64(paramMult)}
		monoBase, realBase := int64(p.load64(paramMonoBase)), int64(p.load64(paramRealBase))
		tsc := rdtsc()
		if p.load64(paramSeq) != seq {
			continue
		}
		if flags&flagTSC == 0 || shift != lineShift {
			break
		}
		d := l.at(tsc)
		return monoBase + d, realBase + d
	}
	return hostClock(unix.CLOCK_MONOTONIC) + p.monoOffset, hostClock(unix.CLOCK_REALTIME) + p.realOff
}

// TSCFrequency is the TSC's measured frequency in Hz, or why the vDSO does
// not use it (then it traps for every call). It calibrates on first use.
func TSCFrequency() (uint64, error) {
	c := calibration()
	return uint64(c.hz), c.err
}

func (p *Params) update(horizon time.Duration) {
	c := calibration()
	p.mu.Lock()
	defer p.mu.Unlock()
	if c.err != nil || p.forced {
		p.publish(0, line{}, 0, 0)
		return
	}
	s := takeSample()
	if p.have {
		ok := s.tsc > p.prev.tsc
		if ok {
			obs := float64(s.mono-p.prev.mono) / float64(s.tsc-p.prev.tsc)
			ok = math.Abs(obs/c.rate-1) <= maxRateError
			if ok && s.mono-p.prev.mono >= int64(100*time.Millisecond) {
				// Long enough to measure the rate to better than 1 ppm.
				p.rate = obs
			}
		}
		if !ok {
			p.have = false
		}
	}
	// The new line starts now, just before it is published, on the old one.
	sw := rdtsc()
	host := s.mono + int64(float64(sw-s.tsc)*c.rate)
	if p.have {
		p.cur = nextLine(p.cur, sw, host, p.rate, horizon.Seconds()*c.hz)
	} else {
		p.rate = c.rate
		p.cur = line{tsc: sw, base: host, mult: multOf(p.rate)}
		p.have = true
	}
	p.prev = s
	p.publish(flagTSC, p.cur, s.real-s.mono, c.hz)
}

// publish writes the page under its sequence counter. realOff is host
// CLOCK_REALTIME minus CLOCK_MONOTONIC, hz the TSC frequency.
func (p *Params) publish(flags uint32, l line, realOff int64, hz float64) {
	seq := p.load64(paramSeq)
	if seq&1 != 0 {
		seq++ // never left odd, but be sure the result is even
	}
	p.store64(paramSeq, seq+1)
	p.store32(paramFlags, flags)
	p.store32(paramShift, lineShift)
	p.store64(paramTSCBase, l.tsc)
	p.store64(paramMult, l.mult)
	p.store64(paramMonoBase, uint64(l.base+p.monoOffset))
	p.store64(paramRealBase, uint64(l.base+realOff+p.realOff))
	p.store64(paramTSCHz, uint64(hz))
	p.store64(paramSeq, seq+2)
}

func (p *Params) word(off int) unsafe.Pointer { return unsafe.Pointer(&p.mem[off]) }

func (p *Params) load64(off int) uint64     { return atomic.LoadUint64((*uint64)(p.word(off))) }
func (p *Params) load32(off int) uint32     { return atomic.LoadUint32((*uint32)(p.word(off))) }
func (p *Params) store64(off int, v uint64) { atomic.StoreUint64((*uint64)(p.word(off)), v) }
func (p *Params) store32(off int, v uint32) { atomic.StoreUint32((*uint32)(p.word(off)), v) }

// line maps TSC ticks to nanoseconds.
type line struct {
	tsc  uint64 // the TSC at base
	base int64  // nanoseconds at tsc
	mult uint64 // nanoseconds per tick << lineShift
}

// at is the line's time at tsc, computed as the vDSO computes it.
func (l line) at(tsc uint64) int64 {
	d := tsc - l.tsc
	if int64(d) < 0 {
		d = 0
	}
	hi, lo := bits.Mul64(d, l.mult)
	return l.base + int64(hi<<(64-lineShift)|lo>>lineShift)
}

func multOf(nsPerTick float64) uint64 { return uint64(nsPerTick*(1<<lineShift) + 0.5) }

// nextLine is the line to publish at TSC value sw, when the host clock reads
// host there: it starts where cur is at sw (or, when cur is further behind
// than one horizon can absorb, steps forward to host), runs at rate
// corrected to meet the host clock horizon ticks later, the correction bound
// by maxSlew. Its value at sw is never below cur's.
func nextLine(cur line, sw uint64, host int64, rate, horizon float64) line {
	now := cur.at(sw)
	errNs := float64(host - now)
	if errNs > maxSlew*rate*horizon {
		now, errNs = host, 0
	}
	slew := errNs / horizon
	slew = math.Max(-maxSlew*rate, math.Min(maxSlew*rate, slew))
	return line{tsc: sw, base: now, mult: multOf(rate + slew)}
}

// sample is one observation of the host clocks against the TSC.
type sample struct {
	tsc  uint64 // the TSC when mono was read
	mono int64  // host CLOCK_MONOTONIC
	real int64  // host CLOCK_REALTIME at the same moment
	raw  int64  // host CLOCK_MONOTONIC_RAW at tsc (calibration only)
}

func hostClock(id int32) int64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(id, &ts); err != nil {
		panic(fmt.Sprintf("vdso: clock_gettime(%d): %v", id, err))
	}
	return ts.Nano()
}

// bracket reads clock id between two TSC reads, several times, and keeps the
// tightest pair: the TSC at its middle and the clock's value.
func bracket(id int32) (uint64, int64) {
	var bestTSC uint64
	var bestNs int64
	width := uint64(math.MaxUint64)
	for i := 0; i < 8; i++ {
		t0 := rdtsc()
		ns := hostClock(id)
		t1 := rdtsc()
		if t1 >= t0 && t1-t0 < width {
			width, bestTSC, bestNs = t1-t0, t0+(t1-t0)/2, ns
		}
	}
	return bestTSC, bestNs
}

// takeSample observes the host's CLOCK_MONOTONIC against the TSC, and
// CLOCK_REALTIME's offset from it.
func takeSample() sample {
	var s sample
	s.tsc, s.mono = bracket(unix.CLOCK_MONOTONIC)
	width := int64(math.MaxInt64)
	var off int64
	for i := 0; i < 4; i++ {
		m0 := hostClock(unix.CLOCK_MONOTONIC)
		r := hostClock(unix.CLOCK_REALTIME)
		m1 := hostClock(unix.CLOCK_MONOTONIC)
		if m1-m0 < width {
			width, off = m1-m0, r-(m0+(m1-m0)/2)
		}
	}
	s.real = s.mono + off
	return s
}

// calib is what the TSC calibration found.
type calib struct {
	hz   float64 // TSC ticks per second of CLOCK_MONOTONIC_RAW
	rate float64 // host CLOCK_MONOTONIC nanoseconds per tick
	err  error   // why the TSC is not used
}

var calibrated struct {
	once sync.Once
	c    calib
}

// calibration measures the TSC once per process.
func calibration() calib {
	calibrated.once.Do(func() { calibrated.c = calibrate() })
	return calibrated.c
}

// calibrate measures the TSC against CLOCK_MONOTONIC_RAW (its frequency)
// and CLOCK_MONOTONIC (the line's first slope) over 20 ms, as two 10 ms
// halves that must agree. It refuses a TSC the CPU does not call invariant.
func calibrate() calib {
	if !invariantTSC() {
		return calib{err: errors.New("the CPU's TSC is not invariant (CPUID 0x80000007 EDX bit 8)")}
	}
	var err error
	for try := 0; try < 3; try++ {
		var raw [3]int64
		var mono [2]int64
		var tsc [3]uint64
		var monoTSC [2]uint64
		for i := 0; i < 3; i++ {
			if i > 0 {
				time.Sleep(10 * time.Millisecond)
			}
			tsc[i], raw[i] = bracket(unix.CLOCK_MONOTONIC_RAW)
			if i != 1 {
				monoTSC[i/2], mono[i/2] = bracket(unix.CLOCK_MONOTONIC)
			}
		}
		hz := func(a, b int) float64 {
			if tsc[b] <= tsc[a] || raw[b] <= raw[a] {
				return 0
			}
			return float64(tsc[b]-tsc[a]) / float64(raw[b]-raw[a]) * 1e9
		}
		h, h1, h2 := hz(0, 2), hz(0, 1), hz(1, 2)
		switch {
		case h < 1e8 || h > 1e11:
			err = fmt.Errorf("implausible TSC frequency %.0f Hz", h)
		case math.Abs(h1/h2-1) > 1e-4:
			err = fmt.Errorf("TSC rate unstable: %.0f Hz then %.0f Hz", h1, h2)
		case monoTSC[1] <= monoTSC[0]:
			err = errors.New("TSC went backwards")
		default:
			rate := float64(mono[1]-mono[0]) / float64(monoTSC[1]-monoTSC[0])
			if math.Abs(rate*h/1e9-1) > maxRateError {
				err = fmt.Errorf("CLOCK_MONOTONIC and CLOCK_MONOTONIC_RAW disagree: %.9f ns/tick at %.0f Hz", rate, h)
				continue
			}
			return calib{hz: h, rate: rate}
		}
	}
	return calib{err: err}
}
