package systrap

// Making a stub (a clone of the source stub, then its first thread) costs
// host work that every fork would pay (an exec keeps its stub unless it is
// a vfork child's; docs/SPECIFICATION.md has the cost); a pool made in the
// background keeps it off the guest's path.

// poolSize is how many address spaces wait ready: a vfork and the exec that
// follows it take two.
const poolSize = 2

// stubPool holds address spaces made ahead of need. It starts empty and is
// first filled after the first address space is taken, so a sandbox whose
// init never forks pays for one spare at most.
type stubPool struct {
	ready  chan *addressSpace
	refill chan struct{}
}

// take returns a ready address space, or nil if none is; either way it asks
// for the pool to be topped up. A stub that died while it waited is
// dropped.
func (sp *stubPool) take() *addressSpace {
	defer func() {
		select {
		case sp.refill <- struct{}{}:
		default: // a refill is already asked for
		}
	}()
	for {
		select {
		case as := <-sp.ready:
			if !as.stub.dead.Load() {
				return as
			}
			as.Release()
		default:
			return nil
		}
	}
}

// startPool starts the goroutine that fills the pool whenever take asks.
// Pooled stubs die with the sentry, like every stub (parent-death signal).
func (p *Platform) startPool() {
	p.pool = stubPool{ready: make(chan *addressSpace, poolSize), refill: make(chan struct{}, 1)}
	go func() {
		for range p.pool.refill {
			for len(p.pool.ready) < poolSize {
				as, err := p.newAddressSpace(aheadOfNeed)
				if err != nil {
					break // the next take makes its own and reports the error
				}
				p.pool.ready <- as
			}
		}
	}()
}
