package e2b

import (
	"sync"
	"time"
)

// pool keeps sandboxes of one template booted ahead, so that a create
// hands one over instead of booting it. A booted sandbox holds nothing
// of its future owner: the environment, metadata and timeout are the
// server's, applied at hand-over and to each command.
//
// How many it keeps follows the demand: as many as the busiest second
// of the last demandWindow asked for (hits and misses alike), at least
// one and at most max (--pool), so that a server that saw a burst of 50
// keeps 50 ready for the next, and one asked once a minute keeps one
// rather than 50 sentries' memory. It boots nothing while the host's
// available memory is below the reserve (hostMemoryLeavesRoom), and
// kills what it holds above its target once the demand has passed.
type pool struct {
	template, rootfs string
	max              int
	ready            chan *instance // capacity max
	demand           demand
	// memoryLeavesRoom says whether the host can take one more sandbox;
	// now is the clock the demand is counted by (both replaced in tests).
	memoryLeavesRoom func() bool
	now              func() time.Time
	// kick wakes fill: a release, or more demand, may have made room.
	kick chan struct{}

	mu sync.Mutex
	// held counts the sandboxes ready, booting, or handed over and not
	// yet released: never more than the target when fill boots, so that
	// the pool never outgrows max (each holds a sentry's memory).
	held int
}

func newPool(template, rootfs string, max int) *pool {
	return &pool{template: template, rootfs: rootfs, max: max, ready: make(chan *instance, max),
		memoryLeavesRoom: hostMemoryLeavesRoom, now: time.Now, kick: make(chan struct{}, 1)}
}

// target is how many sandboxes p should hold now.
func (p *pool) target() int {
	return min(p.max, max(1, p.demand.peak(p.now())))
}

// Timings of fill's loop.
const (
	// poolRetry is how long a pool waits after a boot failed before it
	// boots again, so that a broken template does not spin.
	poolRetry = time.Second
	// poolRecheck is how often an idle pool looks again at its target
	// (the demand window moves on) and at the host's memory.
	poolRecheck = time.Second
)

// fill boots sandboxes into p while it holds fewer than its target and
// the host's memory leaves room, and kills the ready ones above it,
// until closing is closed.
func (s *Server) fill(p *pool, wg *sync.WaitGroup) {
	defer wg.Done()
	lowMemory := false
	for {
		select {
		case <-s.closing:
			return
		default:
		}
		target := p.target()
		p.mu.Lock()
		room := target - p.held
		if room > 0 {
			roomy := p.memoryLeavesRoom()
			switch {
			case !roomy && !lowMemory:
				s.cfg.Log("pool %s: the host's available memory is below its reserve: booting nothing ahead", p.template)
			case roomy && lowMemory:
				s.cfg.Log("pool %s: the host's available memory is above its reserve again", p.template)
			}
			lowMemory = !roomy
			if roomy {
				p.held++
			}
		}
		p.mu.Unlock()
		switch {
		case room > 0 && !lowMemory:
			if !s.fillOne(p) {
				select {
				case <-s.closing:
					return
				case <-time.After(poolRetry):
				}
			}
			continue
		case room < 0:
			select {
			case inst := <-p.ready:
				p.mu.Lock()
				p.held--
				p.mu.Unlock()
				s.rt.destroy(inst)
				continue
			default: // the excess is handed over, and goes when released
			}
		}
		select {
		case <-s.closing:
			return
		case <-p.kick:
		case <-time.After(poolRecheck):
		}
	}
}

// fillOne boots one sandbox into p, whose held count fill has raised for
// it; false if the boot failed.
func (s *Server) fillOne(p *pool) bool {
	inst, err := s.rt.create(randomID(20), p.rootfs, egress{})
	if err != nil {
		p.mu.Lock()
		p.held--
		p.mu.Unlock()
		s.cfg.Log("pool %s: booting a sandbox: %v", p.template, err)
		return false
	}
	// Never blocks: held counts it, and held stays within ready's
	// capacity. Once closing, drain kills what is there.
	p.ready <- inst
	return true
}

// take counts a create that asked p and hands over a booted sandbox, or
// nil if none is ready. Its replacement boots once release is called.
func (p *pool) take() *instance {
	p.demand.add(p.now())
	p.wake()
	select {
	case inst := <-p.ready:
		return inst
	default:
		return nil
	}
}

// release counts out a sandbox take handed over, so that fill boots its
// replacement.
func (p *pool) release() {
	p.mu.Lock()
	p.held--
	p.mu.Unlock()
	p.wake()
}

func (p *pool) wake() {
	select {
	case p.kick <- struct{}{}:
	default: // a wake-up is pending already
	}
}

// drain kills the sandboxes p still holds, once nothing fills it.
func (s *Server) drain(p *pool) {
	for {
		select {
		case inst := <-p.ready:
			s.rt.destroy(inst)
		default:
			return
		}
	}
}

// demandWindow is how far back, in seconds, a pool's demand is counted.
const demandWindow = 60

// demand counts the creates that asked a pool, per second, over the last
// demandWindow seconds.
type demand struct {
	mu     sync.Mutex
	second [demandWindow]int64 // the Unix second each count is of
	count  [demandWindow]int
}

func (d *demand) add(now time.Time) {
	s := now.Unix()
	i := s % demandWindow
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.second[i] != s {
		d.second[i], d.count[i] = s, 0
	}
	d.count[i]++
}

// peak is the busiest second's count in the window that ends at now.
func (d *demand) peak(now time.Time) int {
	s := now.Unix()
	d.mu.Lock()
	defer d.mu.Unlock()
	most := 0
	for i := range d.count {
		if age := s - d.second[i]; age >= 0 && age < demandWindow {
			most = max(most, d.count[i])
		}
	}
	return most
}
