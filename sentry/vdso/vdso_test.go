package vdso

import (
	"bytes"
	"debug/elf"
	"math"
	"math/rand"
	"sort"
	"sync"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The tests below run the committed image in the test process: the
// parameter page and the image mapped as a guest maps them, the functions
// called through callSysV. There, the vDSO's fallback `syscall` is a real
// host system call, so a fallback answers with the host's clock, without the
// guest's monotonic offset: that is how the tests tell the two paths apart.

// guestOffset is a monotonic offset no host clock is near: a value within
// tolerance of host+guestOffset can only come from the parameter page.
const guestOffset = int64(1e15)

// tolerance is the agreement the brief asks between the vDSO and the clock
// the sentry's system call reads.
const tolerance = 50 * time.Microsecond

type image struct {
	mem     []byte // the parameter page, the image, a scratch page
	params  *Params
	syms    map[string]uintptr
	scratch []byte
}

// loadImage maps the parameter page read-write (the sentry's side) and the
// image read-execute right after it, and resolves the image's symbols.
func loadImage(t testing.TB, monoOffset int64) *image {
	t.Helper()
	size := MappingSize() + pageSize
	mem, err := unix.Mmap(-1, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Munmap(mem) })
	copy(mem[ParamsSize:], ImagePages())
	if err := unix.Mprotect(mem[ParamsSize:MappingSize()], unix.PROT_READ|unix.PROT_EXEC); err != nil {
		t.Fatal(err)
	}
	f, err := elf.NewFile(bytes.NewReader(Image()))
	if err != nil {
		t.Fatal(err)
	}
	syms, err := f.DynamicSymbols()
	if err != nil {
		t.Fatal(err)
	}
	img := &image{mem: mem, params: NewParams(mem[:ParamsSize], monoOffset), syms: map[string]uintptr{},
		scratch: mem[MappingSize():]}
	base := uintptr(unsafe.Pointer(&mem[ParamsSize]))
	for _, s := range syms {
		img.syms[s.Name] = base + uintptr(s.Value)
	}
	return img
}

func (m *image) out() uintptr { return uintptr(unsafe.Pointer(&m.scratch[0])) }

func (m *image) call(name string, a0, a1, a2 uintptr) uintptr {
	fn, ok := m.syms[name]
	if !ok {
		panic("no symbol " + name)
	}
	return callSysV(fn, a0, a1, a2)
}

// clockGettime calls __vdso_clock_gettime(id, scratch).
func (m *image) clockGettime(id int32) (int64, int32) {
	r := int32(m.call("__vdso_clock_gettime", uintptr(int64(id)), m.out(), 0))
	ts := (*unix.Timespec)(unsafe.Pointer(&m.scratch[0]))
	return ts.Nano(), r
}

func (m *image) mono(t testing.TB) int64 {
	ns, r := m.clockGettime(unix.CLOCK_MONOTONIC)
	if r != 0 {
		t.Fatalf("clock_gettime(MONOTONIC) = %d", r)
	}
	return ns
}

func needTSC(t testing.TB) {
	t.Helper()
	if _, err := TSCFrequency(); err != nil {
		t.Skipf("the vDSO falls back to system calls on this host: %v", err)
	}
}

// within checks that got lies in [lo, hi] widened by tolerance.
func within(t *testing.T, what string, got, lo, hi int64) {
	t.Helper()
	if got < lo-int64(tolerance) || got > hi+int64(tolerance) {
		t.Errorf("%s = %d, host says [%d, %d]: off by %v", what, got, lo, hi, time.Duration(got-(lo+hi)/2))
	}
}

func TestClockGettime(t *testing.T) {
	needTSC(t)
	m := loadImage(t, guestOffset)
	m.params.Update()
	for _, c := range []struct {
		id   int32
		name string
		host int32
		off  int64
	}{
		{unix.CLOCK_MONOTONIC, "MONOTONIC", unix.CLOCK_MONOTONIC, guestOffset},
		{unix.CLOCK_MONOTONIC_RAW, "MONOTONIC_RAW", unix.CLOCK_MONOTONIC, guestOffset},
		{unix.CLOCK_MONOTONIC_COARSE, "MONOTONIC_COARSE", unix.CLOCK_MONOTONIC, guestOffset},
		{unix.CLOCK_BOOTTIME, "BOOTTIME", unix.CLOCK_MONOTONIC, guestOffset},
		{unix.CLOCK_REALTIME, "REALTIME", unix.CLOCK_REALTIME, 0},
		{unix.CLOCK_REALTIME_COARSE, "REALTIME_COARSE", unix.CLOCK_REALTIME, 0},
		{unix.CLOCK_TAI, "TAI", unix.CLOCK_REALTIME, 0},
	} {
		for i := 0; i < 100; i++ {
			lo := hostClock(c.host) + c.off
			got, r := m.clockGettime(c.id)
			hi := hostClock(c.host) + c.off
			if r != 0 {
				t.Fatalf("clock_gettime(%s) = %d", c.name, r)
			}
			within(t, c.name, got, lo, hi)
		}
	}
	// The unprefixed name is the same function.
	if m.syms["clock_gettime"] != m.syms["__vdso_clock_gettime"] {
		t.Error("clock_gettime is not __vdso_clock_gettime")
	}
}

func TestGettimeofdayAndTime(t *testing.T) {
	needTSC(t)
	m := loadImage(t, guestOffset)
	m.params.Update()
	out := m.out()
	for i := range 16 {
		m.scratch[i] = 0xff
	}
	lo := hostClock(unix.CLOCK_REALTIME)
	r := int32(m.call("__vdso_gettimeofday", out, out+16, 0))
	hi := hostClock(unix.CLOCK_REALTIME)
	tv := (*unix.Timeval)(unsafe.Pointer(&m.scratch[0]))
	tz := (*[2]int32)(unsafe.Pointer(&m.scratch[16]))
	if r != 0 || tz[0] != 0 || tz[1] != 0 {
		t.Fatalf("gettimeofday = %d, tz %v", r, tz)
	}
	within(t, "gettimeofday", tv.Nano(), lo-1000, hi)
	if r := int32(m.call("__vdso_gettimeofday", 0, 0, 0)); r != 0 {
		t.Errorf("gettimeofday(NULL, NULL) = %d", r)
	}

	secs := func() (int64, int64) { return hostClock(unix.CLOCK_REALTIME) / 1e9, 0 }
	lo, _ = secs()
	got := int64(m.call("__vdso_time", 0, 0, 0))
	hi, _ = secs()
	if got < lo || got > hi {
		t.Errorf("time(NULL) = %d, host says [%d, %d]", got, lo, hi)
	}
	*(*int64)(unsafe.Pointer(&m.scratch[0])) = -1
	lo, _ = secs()
	got = int64(m.call("__vdso_time", out, 0, 0))
	hi, _ = secs()
	stored := *(*int64)(unsafe.Pointer(&m.scratch[0]))
	if got < lo || got > hi || stored != got {
		t.Errorf("time(&t) = %d, t = %d, host says [%d, %d]", got, stored, lo, hi)
	}
}

func TestGetcpu(t *testing.T) {
	m := loadImage(t, guestOffset)
	for i := range 8 {
		m.scratch[i] = 0xff
	}
	out := m.out()
	if r := int32(m.call("__vdso_getcpu", out, out+4, 0)); r != 0 {
		t.Fatalf("getcpu = %d", r)
	}
	if cpu := *(*[2]uint32)(unsafe.Pointer(&m.scratch[0])); cpu != [2]uint32{} {
		t.Errorf("getcpu gave cpu, node = %v, want 0, 0", cpu)
	}
	if r := int32(m.call("getcpu", 0, 0, 0)); r != 0 {
		t.Errorf("getcpu(NULL, NULL, NULL) = %d", r)
	}
}

func TestClockGetres(t *testing.T) {
	m := loadImage(t, guestOffset)
	res := (*unix.Timespec)(unsafe.Pointer(&m.scratch[0]))
	for _, c := range []struct {
		id   int32
		want int64
	}{
		{unix.CLOCK_REALTIME, 1}, {unix.CLOCK_MONOTONIC, 1}, {unix.CLOCK_MONOTONIC_RAW, 1},
		{unix.CLOCK_BOOTTIME, 1}, {unix.CLOCK_TAI, 1},
		{unix.CLOCK_REALTIME_COARSE, 4e6}, {unix.CLOCK_MONOTONIC_COARSE, 4e6},
	} {
		*res = unix.Timespec{Sec: 7, Nsec: 7}
		if r := int32(m.call("__vdso_clock_getres", uintptr(c.id), m.out(), 0)); r != 0 || res.Sec != 0 || res.Nsec != c.want {
			t.Errorf("clock_getres(%d) = %d, %+v; want 0, %d ns", c.id, r, *res, c.want)
		}
		if r := int32(m.call("clock_getres", uintptr(c.id), 0, 0)); r != 0 {
			t.Errorf("clock_getres(%d, NULL) = %d", c.id, r)
		}
	}
	// Unknown clocks go to the kernel, which says EINVAL.
	for _, id := range []int64{100, -1} {
		if r := int32(m.call("__vdso_clock_getres", uintptr(id), m.out(), 0)); r != -int32(unix.EINVAL) {
			t.Errorf("clock_getres(%d) = %d, want -EINVAL", id, r)
		}
	}
	// A CPU-time clock too: the host answers.
	*res = unix.Timespec{}
	if r := int32(m.call("__vdso_clock_getres", unix.CLOCK_PROCESS_CPUTIME_ID, m.out(), 0)); r != 0 || res.Nano() <= 0 {
		t.Errorf("clock_getres(PROCESS_CPUTIME_ID) = %d, %+v", r, *res)
	}
}

// TestFallbacks checks every road to the `syscall` instruction: unknown
// clocks, a page that says to trap, a writer that never finishes.
func TestFallbacks(t *testing.T) {
	m := loadImage(t, guestOffset)
	// Before the first Update the page says to trap: the host answers,
	// without the guest's offset.
	lo := hostClock(unix.CLOCK_MONOTONIC)
	got := m.mono(t)
	within(t, "MONOTONIC before Update (host's)", got, lo, hostClock(unix.CLOCK_MONOTONIC))

	for _, id := range []int64{100, 12, -1} {
		if _, r := m.clockGettime(int32(id)); r != -int32(unix.EINVAL) {
			t.Errorf("clock_gettime(%d) = %d, want -EINVAL", id, r)
		}
	}
	// -6 is the calling thread's CPU-time clock, which the host knows.
	if ns, r := m.clockGettime(-6); r != 0 || ns <= 0 {
		t.Errorf("clock_gettime(-6) = %d, %d: want the thread's CPU time", r, ns)
	}
	var cpu unix.Timespec
	unix.ClockGettime(unix.CLOCK_PROCESS_CPUTIME_ID, &cpu)
	ns, r := m.clockGettime(unix.CLOCK_PROCESS_CPUTIME_ID)
	if r != 0 || ns < cpu.Nano() || ns > cpu.Nano()+int64(time.Second) {
		t.Errorf("clock_gettime(PROCESS_CPUTIME_ID) = %d, %d; host said %d", r, ns, cpu.Nano())
	}
	if _, err := TSCFrequency(); err != nil {
		return
	}

	m.params.Update()
	lo = hostClock(unix.CLOCK_MONOTONIC) + guestOffset
	within(t, "MONOTONIC after Update", m.mono(t), lo, hostClock(unix.CLOCK_MONOTONIC)+guestOffset)

	m.params.SetFallback(true)
	lo = hostClock(unix.CLOCK_MONOTONIC)
	within(t, "MONOTONIC with SetFallback (host's)", m.mono(t), lo, hostClock(unix.CLOCK_MONOTONIC))
	lo = hostClock(unix.CLOCK_REALTIME)
	tv := (*unix.Timeval)(unsafe.Pointer(&m.scratch[0]))
	if r := int32(m.call("__vdso_gettimeofday", m.out(), 0, 0)); r != 0 {
		t.Errorf("gettimeofday with SetFallback = %d", r)
	}
	within(t, "gettimeofday with SetFallback", tv.Nano(), lo-1000, hostClock(unix.CLOCK_REALTIME))

	m.params.SetFallback(false)
	m.params.Update()
	lo = hostClock(unix.CLOCK_MONOTONIC) + guestOffset
	within(t, "MONOTONIC after SetFallback(false)", m.mono(t), lo, hostClock(unix.CLOCK_MONOTONIC)+guestOffset)

	// A writer stuck mid-update (an odd sequence): readers give up waiting
	// and trap.
	m.params.mu.Lock()
	seq := m.params.load64(paramSeq)
	m.params.store64(paramSeq, seq+1)
	lo = hostClock(unix.CLOCK_MONOTONIC)
	within(t, "MONOTONIC with the writer stuck (host's)", m.mono(t), lo, hostClock(unix.CLOCK_MONOTONIC))
	m.params.store64(paramSeq, seq+2)
	m.params.mu.Unlock()
	lo = hostClock(unix.CLOCK_MONOTONIC) + guestOffset
	within(t, "MONOTONIC after the writer finished", m.mono(t), lo, hostClock(unix.CLOCK_MONOTONIC)+guestOffset)
}

// TestMonotonicAcrossUpdates reads the clock 1e5 times while another
// goroutine re-draws the line as fast as it can: the readings never go back
// and never leave the host clock (a torn read of the page would).
func TestMonotonicAcrossUpdates(t *testing.T) {
	needTSC(t)
	m := loadImage(t, guestOffset)
	m.params.Update()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var updates int
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			// A short horizon makes every update change the slope.
			m.params.update(time.Millisecond)
			updates++
		}
	}()
	const n = 100000
	prev := m.mono(t)
	var back, trapped int
	for i := 0; i < n; i++ {
		lo := hostClock(unix.CLOCK_MONOTONIC) + guestOffset
		now := m.mono(t)
		if now < guestOffset/2 {
			// The reader gave up waiting for a writer stuck mid-update
			// (descheduled) and made the system call, which here is
			// the host's, without the offset. In moat the sentry
			// answers (from Params.Now, the same line).
			trapped++
			continue
		}
		if now < prev {
			back++
			if back < 5 {
				t.Errorf("call %d: %d after %d: back by %d ns", i, now, prev, prev-now)
			}
		}
		if i%1000 == 0 {
			within(t, "MONOTONIC during updates", now, lo, hostClock(unix.CLOCK_MONOTONIC)+guestOffset)
		}
		prev = now
	}
	close(stop)
	wg.Wait()
	if back > 0 {
		t.Errorf("%d of %d readings went back", back, n)
	}
	t.Logf("%d calls, %d updates, %d fell back to the system call, never back", n, updates, trapped)
	if trapped > n/100 {
		t.Errorf("%d of %d calls fell back to the system call", trapped, n)
	}
}

// TestPrecision follows the clock for a few seconds with Start driving the
// updates, and reports how far the vDSO is from the host clock the sentry's
// clock_gettime reads.
func TestPrecision(t *testing.T) {
	needTSC(t)
	if testing.Short() {
		t.Skip("takes 3 s")
	}
	m := loadImage(t, guestOffset)
	stop := make(chan struct{})
	defer close(stop)
	m.params.Start(stop)
	for m.params.load32(paramFlags)&flagTSC == 0 {
		time.Sleep(time.Millisecond)
	}
	var errs, realErrs []float64
	prev := m.mono(t)
	deadline := time.Now().Add(3 * time.Second)
	for time.Now().Before(deadline) {
		for i := 0; i < 100; i++ {
			h0 := hostClock(unix.CLOCK_MONOTONIC)
			v := m.mono(t) - guestOffset
			h1 := hostClock(unix.CLOCK_MONOTONIC)
			if v+guestOffset < prev {
				t.Fatalf("MONOTONIC went back by %d ns", prev-v-guestOffset)
			}
			prev = v + guestOffset
			if h1-h0 < 2000 { // a clean bracket
				errs = append(errs, float64(v-(h0+h1)/2))
			}
			r0 := hostClock(unix.CLOCK_REALTIME)
			rv, _ := m.clockGettime(unix.CLOCK_REALTIME)
			r1 := hostClock(unix.CLOCK_REALTIME)
			if r1-r0 < 2000 {
				realErrs = append(realErrs, float64(rv-(r0+r1)/2))
			}
		}
		time.Sleep(time.Millisecond)
	}
	for _, c := range []struct {
		name string
		e    []float64
	}{{"MONOTONIC", errs}, {"REALTIME", realErrs}} {
		if len(c.e) == 0 {
			t.Fatalf("%s: no clean sample", c.name)
		}
		sort.Slice(c.e, func(i, j int) bool { return math.Abs(c.e[i]) < math.Abs(c.e[j]) })
		p50, p99, max := c.e[len(c.e)/2], c.e[len(c.e)*99/100], c.e[len(c.e)-1]
		t.Logf("%s - host: |median| %.0f ns, |p99| %.0f ns, max %.0f ns over %d samples", c.name, math.Abs(p50), math.Abs(p99), max, len(c.e))
		if math.Abs(max) > float64(tolerance) {
			t.Errorf("%s off by %.0f ns", c.name, max)
		}
	}
	hz, _ := TSCFrequency()
	m.params.mu.Lock()
	t.Logf("TSC %d Hz, rate %.9f ns/tick", hz, m.params.rate)
	m.params.mu.Unlock()
}

// TestNow checks the sentry-side reader agrees with the vDSO.
func TestNow(t *testing.T) {
	needTSC(t)
	m := loadImage(t, guestOffset)
	m.params.Update()
	for i := 0; i < 1000; i++ {
		// Both clocks are read before and after Now, so that the thread
		// losing its CPU in between widens the bracket, not the error.
		ra, _ := m.clockGettime(unix.CLOCK_REALTIME)
		a := m.mono(t)
		mono, real := m.params.Now()
		b := m.mono(t)
		rb, _ := m.clockGettime(unix.CLOCK_REALTIME)
		if mono < a || mono > b {
			t.Fatalf("Now() = %d, vDSO said %d then %d", mono, a, b)
		}
		// Now may lag the vDSO by the tolerance, never lead it.
		if real < ra-int64(tolerance) || real > rb {
			t.Fatalf("Now() realtime %d, vDSO %d before it and %d after", real, ra, rb)
		}
	}
	m.params.SetFallback(true)
	lo := hostClock(unix.CLOCK_MONOTONIC) + guestOffset
	mono, _ := m.params.Now()
	within(t, "Now() with SetFallback", mono, lo, hostClock(unix.CLOCK_MONOTONIC)+guestOffset)
}

// TestNextLine checks the line arithmetic on made-up clocks: a new line
// starts on the old one (or steps forward), never below it, and meets the
// host clock one horizon later when the slew allows.
func TestNextLine(t *testing.T) {
	const rate = 1 / 2.6 // ns per tick at 2.6 GHz
	const horizon = 2.6e9
	rnd := rand.New(rand.NewSource(1))
	for i := 0; i < 10000; i++ {
		cur := line{tsc: rnd.Uint64() >> 4, base: rnd.Int63() >> 4, mult: multOf(rate * (1 + (rnd.Float64()-0.5)*1e-3))}
		sw := cur.tsc + uint64(rnd.Int63n(1e10))
		errNs := rnd.NormFloat64() * math.Pow(10, float64(rnd.Intn(8)))
		host := cur.at(sw) + int64(errNs)
		next := nextLine(cur, sw, host, rate, horizon)
		if next.at(sw) < cur.at(sw) {
			t.Fatalf("new line starts %d ns below the old", cur.at(sw)-next.at(sw))
		}
		if next.at(sw+1000) < cur.at(sw) {
			t.Fatal("new line below the old just after the switch")
		}
		target := host + int64(horizon*rate)
		end := next.at(sw + uint64(horizon))
		switch {
		case math.Abs(errNs) <= maxSlew*rate*horizon:
			if d := end - target; d < -2 || d > 2 {
				t.Fatalf("error %.0f ns: line ends %d ns from the host", errNs, d)
			}
		case errNs > 0: // stepped forward
			if next.at(sw) != host {
				t.Fatalf("error %.0f ns: no step", errNs)
			}
		default: // slewing back at the bound
			if d := float64(end - target); d < 0 || d > -errNs {
				t.Fatalf("error %.0f ns: line ends %.0f ns from the host", errNs, d)
			}
		}
	}
}

func BenchmarkVDSOClockGettime(b *testing.B) {
	needTSC(b)
	m := loadImage(b, guestOffset)
	m.params.Update()
	fn, out := m.syms["__vdso_clock_gettime"], m.out()
	for b.Loop() {
		callSysV(fn, unix.CLOCK_MONOTONIC, out, 0)
	}
}

func BenchmarkHostClockGettime(b *testing.B) {
	var ts unix.Timespec
	for b.Loop() {
		unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	}
}
