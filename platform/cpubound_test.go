package platform

import (
	"testing"
	"time"
)

func TestHostCPUBound(t *testing.T) {
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	ns := func(d time.Duration) uint64 { return uint64(d) }
	var b HostCPUBound
	if b.Marked() {
		t.Fatal("marked before a reading")
	}
	// The first reading only marks: there is nothing to bound by yet.
	if got := b.Bound(ms(50), ns(ms(1000)), true); got != ms(50) {
		t.Errorf("first reading: %v, want 50ms", got)
	}
	if !b.Marked() {
		t.Fatal("not marked after a reading")
	}
	// Short runs are taken as measured.
	if got := b.Bound(ms(1), 0, false); got != ms(1) {
		t.Errorf("short run: %v, want 1ms", got)
	}
	// A 100 ms run the host gave 40 ms of CPU (the 1 ms before included).
	if got := b.Bound(ms(100), ns(ms(1041)), true); got != ms(40) {
		t.Errorf("throttled run: %v, want 40ms", got)
	}
	// A run the host ran throughout counts whole (the bound is loose by
	// the handler's own CPU time).
	if got := b.Bound(ms(30), ns(ms(1072)), true); got != ms(30) {
		t.Errorf("unthrottled run: %v, want 30ms", got)
	}
	// Short runs that were counted high are taken back at the next bound,
	// never below nothing.
	b.Bound(ms(5), 0, false)
	b.Bound(ms(5), 0, false)
	if got := b.Bound(ms(20), ns(ms(1080)), true); got != 0 {
		t.Errorf("after over-counted short runs: %v, want 0", got)
	}
	// A reading below the mark (forged, or a reused slot's) only marks.
	if got := b.Bound(ms(7), ns(ms(10)), true); got != ms(7) {
		t.Errorf("reading below the mark: %v, want 7ms", got)
	}
}
