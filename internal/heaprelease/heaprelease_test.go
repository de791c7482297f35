package heaprelease

import (
	"runtime"
	"runtime/metrics"
	"testing"
)

func TestDue(t *testing.T) {
	const mib = 1 << 20
	r := &releaser{prev: sample{allocs: 10 * mib}, releasedAt: 10 * mib}
	steps := []struct {
		name string
		cur  sample
		want bool
	}{
		{"no collection yet, however quiet after work", sample{allocs: 12 * mib, cycles: 0}, false},
		{"busy: allocating within the interval", sample{allocs: 20 * mib, cycles: 3}, false},
		{"quiet after work, collected before", sample{allocs: 20*mib + 1000, cycles: 3}, true},
	}
	for _, s := range steps {
		if got := r.due(s.cur); got != s.want {
			t.Fatalf("%s: due = %v, want %v", s.name, got, s.want)
		}
	}
	r.released(20*mib + 5000)
	if r.due(sample{allocs: 20*mib + 9000, cycles: 4}) {
		t.Fatal("due again with no work since the release")
	}
	if r.due(sample{allocs: 22 * mib, cycles: 4}) {
		t.Fatal("due while allocating 2 MiB in one interval")
	}
	if !r.due(sample{allocs: 22*mib + 100, cycles: 4}) {
		t.Fatal("not due when quiet again after new work")
	}
}

// TestLook runs the looks of a process that works (8 MiB of garbage and
// a collection) and then goes quiet: the first look sees the work, the
// second releases, after which the free heap the garbage left is no longer
// held (a little may be: the runtime keeps small per-P page caches).
func TestLook(t *testing.T) {
	free := []metrics.Sample{{Name: "/memory/classes/heap/free:bytes"}}
	r, buf := newReleaser()
	garbage := make([][]byte, 0, 512)
	for range 512 {
		garbage = append(garbage, make([]byte, 16<<10))
	}
	runtime.KeepAlive(garbage)
	garbage = nil
	runtime.GC()
	if r.look(buf) {
		t.Fatal("released in the interval the work was done")
	}
	if !r.look(buf) {
		t.Fatal("not released once quiet after the work")
	}
	metrics.Read(free)
	if held := free[0].Value.Uint64(); held > 4<<20 {
		t.Fatalf("%d bytes of free heap still held after the release", held)
	}
	if r.look(buf) {
		t.Fatal("released again with no work since")
	}
}
