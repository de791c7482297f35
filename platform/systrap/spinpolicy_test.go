package systrap

import (
	"sync"
	"sync/atomic"
	"testing"
)

// windowOf counts one window of waits, contended of them contended and the
// rest hits, and returns the decision in force afterwards.
func windowOf(p *spinPolicy, contended int) policyState {
	var w spinWindowCount
	for i := 0; i < spinWindow; i++ {
		o := spinHit
		if i < contended {
			o = spinContended
		}
		if w.add(o) {
			p.endWindow(w.take())
		}
	}
	return unpackPolicy(p.state.Load())
}

func TestSpinningStopsWhenAQuarterOfAWindowsSpinsWereContended(t *testing.T) {
	var p spinPolicy
	if !p.spinning() {
		t.Fatal("a new policy does not spin")
	}
	s := windowOf(&p, spinWindow/contendedShare)
	if p.spinning() || !s.sleep || s.left != 1 {
		t.Errorf("after a window with %d of %d waits contended: spinning %v, state %+v; want sleeping for 1 window",
			spinWindow/contendedShare, spinWindow, p.spinning(), s)
	}
}

func TestSpinningGoesOnWhenFewSpinsWereContendedOrMissed(t *testing.T) {
	var p spinPolicy
	var count spinWindowCount
	for w := 0; w < 10; w++ {
		for i := 0; i < spinWindow; i++ {
			o := spinMiss // a guest that computes long between calls
			if i < spinWindow/contendedShare-1 {
				o = spinContended
			}
			if count.add(o) {
				p.endWindow(count.take())
			}
		}
		if !p.spinning() {
			t.Fatalf("window %d: %d of %d contended and the rest missed stopped the spinning", w, spinWindow/contendedShare-1, spinWindow)
		}
	}
}

func TestSleepingLastsItsWindowsThenSpinningIsTriedAgain(t *testing.T) {
	s := policyState{sleep: true, left: 3, exp: 2}
	for want := uint32(2); want >= 1; want-- {
		// In a window of sleeping nothing spins: contended counts nothing.
		s = nextPolicy(s, spinWindow)
		if !s.sleep || s.left != want {
			t.Fatalf("state %+v, want sleeping with %d windows left", s, want)
		}
	}
	s = nextPolicy(s, spinWindow)
	if s.sleep || s.exp != 2 {
		t.Errorf("after the last window of sleeping: %+v; want a trial of spinning that keeps the backoff exponent 2", s)
	}
}

func TestTheSleepDoublesWhileTrialsFindContentionUpToABound(t *testing.T) {
	var s policyState
	want := uint32(1)
	for i := 0; i < maxBackoffExp+3; i++ {
		s = nextPolicy(s, spinWindow) // a contended trial
		if !s.sleep || s.left != want {
			t.Fatalf("trial %d: %+v, want sleeping for %d windows", i, s, want)
		}
		for s.sleep {
			s = nextPolicy(s, 0)
		}
		if want < 1<<(maxBackoffExp-1) {
			want *= 2
		}
	}
}

func TestAnUncontendedTrialShortensTheNextSleep(t *testing.T) {
	s := policyState{exp: 4}
	s = nextPolicy(s, 0)
	if s.sleep || s.exp != 3 {
		t.Fatalf("after a free window: %+v, want spinning with exponent 3", s)
	}
	s = nextPolicy(s, spinWindow)
	if !s.sleep || s.left != 1<<3 {
		t.Errorf("after a contended one: %+v, want sleeping for 8 windows", s)
	}
}

func TestThePackedStateReadsBack(t *testing.T) {
	for _, s := range []policyState{{}, {sleep: true, left: 1, exp: 0}, {sleep: true, left: 1 << (maxBackoffExp - 1), exp: maxBackoffExp - 1}, {exp: 5}} {
		if got := unpackPolicy(s.pack()); got != s {
			t.Errorf("unpack(pack(%+v)) = %+v", s, got)
		}
	}
}

func TestAWindowCountsItsWaitsAndStartsAgain(t *testing.T) {
	var w spinWindowCount
	for i := 1; i < spinWindow; i++ {
		o := spinMiss
		if i%2 == 0 {
			o = spinContended
		}
		if w.add(o) {
			t.Fatalf("the window was full after %d of %d waits", i, spinWindow)
		}
	}
	if !w.add(spinHit) {
		t.Fatalf("the window was not full after %d waits", spinWindow)
	}
	if got, want := w.take(), uint32((spinWindow-1)/2); got != want {
		t.Errorf("the window counted %d contended waits, want %d", got, want)
	}
	if w.waits != 0 || w.contended != 0 {
		t.Errorf("after take the count is %+v, want it empty", w)
	}
}

// TestWindowsEndingAtOnceAreEachDecided has threads end contended windows
// concurrently: none of their decisions is lost, so the sleep that follows
// is as long as that many contended trials make it.
func TestWindowsEndingAtOnceAreEachDecided(t *testing.T) {
	var p spinPolicy
	var wg sync.WaitGroup
	for g := 0; g < 3; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p.endWindow(spinWindow)
		}()
	}
	wg.Wait()
	// Whatever their order: the first stops the spinning for 1 window, the
	// second spends it (a trial follows), the third is that trial, which
	// finds contention: sleeping for 2 windows, exponent 2.
	if s := unpackPolicy(p.state.Load()); !s.sleep || s.left != 2 || s.exp != 2 {
		t.Errorf("after three contended windows at once: %+v, want sleeping for 2 windows with exponent 2", s)
	}
}

func TestAWaitReportsAHitOnlyWhenTheWordChangedWhileSpinning(t *testing.T) {
	var dead atomic.Bool
	var sleeping uint32
	word := uint32(1)
	if ok, o := wait(&word, 1, &sleeping, &dead, 1000); !ok || o != spinHit {
		t.Errorf("waiting for a word already set: ok %v, outcome %v; want true, a hit", ok, o)
	}
	// The word never changes and the peer is dead: the spin runs out, then
	// the wait gives up instead of sleeping.
	dead.Store(true)
	if ok, o := wait(&word, 2, &sleeping, &dead, 1000); ok || o == spinHit {
		t.Errorf("waiting for a word that never changes: ok %v, outcome %v; want false, a miss or contended", ok, o)
	}
	if sleeping != 0 {
		t.Error("the wait left its sleeping flag set")
	}
}
