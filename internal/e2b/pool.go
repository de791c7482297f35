package e2b

import (
	"sync"
	"time"
)

// pool keeps sandboxes of one template booted ahead, so that a create
// hands one over instead of booting it. A booted sandbox holds nothing
// of its future owner: the environment, metadata and timeout are the
// server's, applied at hand-over and to each command.
type pool struct {
	template, rootfs string
	ready            chan *instance
	// slots holds a token for each sandbox the pool may still boot: fill
	// takes one before it boots and release gives it back, so that the
	// sandboxes booted and booting never outnumber the pool's size (each
	// holds a sentry's memory), and a full pool boots nothing.
	slots chan struct{}
}

func newPool(template, rootfs string, size int) *pool {
	p := &pool{template: template, rootfs: rootfs, ready: make(chan *instance, size), slots: make(chan struct{}, size)}
	for range size {
		p.slots <- struct{}{}
	}
	return p
}

// poolRetry is how long a pool waits after a boot failed before it
// boots again, so that a broken template does not spin.
const poolRetry = time.Second

// fill boots sandboxes into p whenever it has room, until closing is
// closed.
func (s *Server) fill(p *pool, wg *sync.WaitGroup) {
	defer wg.Done()
	for {
		select {
		case <-s.closing:
			return
		default:
		}
		select {
		case <-s.closing:
			return
		case <-p.slots:
		}
		inst, err := s.rt.create(randomID(20), p.rootfs, egress{})
		if err != nil {
			p.slots <- struct{}{}
			s.cfg.Log("pool %s: booting a sandbox: %v", p.template, err)
			select {
			case <-s.closing:
				return
			case <-time.After(poolRetry):
			}
			continue
		}
		// Never blocks: the slot taken is room in ready. Once closing,
		// drain kills what is there.
		p.ready <- inst
	}
}

// take hands over a booted sandbox, or nil if none is ready. Its
// replacement boots once release is called.
func (p *pool) take() *instance {
	select {
	case inst := <-p.ready:
		return inst
	default:
		return nil
	}
}

// release gives back the slot of a sandbox take handed over, so that fill
// boots its replacement.
func (p *pool) release() { p.slots <- struct{}{} }

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
