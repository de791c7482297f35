// Package heaprelease gives a long-lived process's free heap back to the
// host once the process has gone quiet after work.
//
// The Go runtime keeps the heap it grew to: its scavenger returns only
// what lies above about 110% of the next collection's goal, and the goal
// is at least 4 MiB, so a sentry that ran a burst of guest work (a few
// hundred fork+exec) and then idles holds 5 MiB of heap arena for good,
// half of it free (docs/architecture.md, "What an idle sandbox costs the
// host"). One forced collection and scavenge when the process is quiet
// gives that back. It is never done before the runtime's first
// collection: that one's metadata costs more than it frees in a process
// whose heap never reached the first goal (measured there too).
package heaprelease

import (
	"runtime/debug"
	"runtime/metrics"
	"time"
)

const (
	// interval is how often the process is looked at; a look reads two
	// counters and takes no lock the program holds.
	interval = 10 * time.Second
	// quietBytes is the most a process may allocate in one interval and
	// still count as quiet.
	quietBytes = 256 << 10
	// workBytes is what must have been allocated since the last release
	// (or start) for another to be worth a collection: less leaves too
	// little garbage to give back.
	workBytes = 1 << 20
)

// sample is what one look reads of the runtime.
type sample struct {
	allocs uint64 // bytes allocated since start
	cycles uint64 // completed collections
}

// names are the runtime/metrics read into a sample, in order.
var names = []string{
	"/gc/heap/allocs:bytes",
	"/gc/cycles/total:gc-cycles",
}

// read takes a sample of the runtime's counters, through buf (names').
func read(buf []metrics.Sample) sample {
	metrics.Read(buf)
	return sample{allocs: buf[0].Value.Uint64(), cycles: buf[1].Value.Uint64()}
}

// releaser decides, look by look, when to release.
type releaser struct {
	prev       sample // the last look
	releasedAt uint64 // allocs at the last release (or start)
}

// due reports whether the heap should be released now, cur being this
// look: the process was quiet since the last look, worked enough since
// the last release, and the runtime has collected before.
func (r *releaser) due(cur sample) bool {
	quiet := cur.allocs-r.prev.allocs <= quietBytes
	worked := cur.allocs-r.releasedAt >= workBytes
	r.prev = cur
	return quiet && worked && cur.cycles > 0
}

// released records a release after which allocs bytes had been
// allocated: the collection's own allocations are not the program's work.
func (r *releaser) released(allocs uint64) {
	r.releasedAt = allocs
	r.prev.allocs = allocs
}

// look reads the counters through buf and releases the heap if due; it
// reports whether it did.
func (r *releaser) look(buf []metrics.Sample) bool {
	if !r.due(read(buf)) {
		return false
	}
	debug.FreeOSMemory()
	r.released(read(buf).allocs)
	return true
}

// newReleaser returns a releaser counting from now, and its buffer.
func newReleaser() (*releaser, []metrics.Sample) {
	buf := make([]metrics.Sample, len(names))
	for i, n := range names {
		buf[i].Name = n
	}
	now := read(buf)
	return &releaser{prev: now, releasedAt: now.allocs}, buf
}

// Start looks at the process every interval from now on, releasing its
// free heap to the host when due says so.
func Start() {
	r, buf := newReleaser()
	go func() {
		t := time.NewTicker(interval)
		defer t.Stop()
		for range t.C {
			r.look(buf)
		}
	}()
}
