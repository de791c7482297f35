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
}

// poolRetry is how long a pool waits after a boot failed before it
// boots again, so that a broken template does not spin.
const poolRetry = time.Second

// fill boots sandboxes into p until closing is closed, then kills those
// it holds.
func (s *Server) fill(p *pool, wg *sync.WaitGroup) {
	defer wg.Done()
	for {
		select {
		case <-s.closing:
			return
		default:
		}
		inst, err := s.rt.create(randomID(20), p.rootfs)
		if err != nil {
			s.cfg.Log("pool %s: booting a sandbox: %v", p.template, err)
			select {
			case <-s.closing:
				return
			case <-time.After(poolRetry):
			}
			continue
		}
		select {
		case p.ready <- inst:
		case <-s.closing:
			s.rt.destroy(inst)
			return
		}
	}
}

// take hands over a booted sandbox, or nil if none is ready.
func (p *pool) take() *instance {
	select {
	case inst := <-p.ready:
		return inst
	default:
		return nil
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
