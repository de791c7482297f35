package systrap

import (
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// reaper collects dead stub processes. It is the only place that waits for
// the sentry's children, so a stub's death is noticed however it happens (a
// guest that blocked a signal it then raised, the OOM killer, a bug), and
// anyone waiting on that stub is woken.
type reaper struct {
	mu    sync.Mutex
	stubs map[int]*stubProcess
	early map[int]bool // reaped before they were registered
	once  sync.Once
}

// stubReaper is the process's one reaper: a wait for any child must not
// race with another.
var stubReaper = &reaper{stubs: make(map[int]*stubProcess), early: make(map[int]bool)}

func (r *reaper) register(s *stubProcess) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.early[s.pid] {
		delete(r.early, s.pid)
		s.markDead()
		return
	}
	r.stubs[s.pid] = s
}

func (r *reaper) start() {
	r.once.Do(func() { go r.loop() })
}

func (r *reaper) loop() {
	for {
		var ws unix.WaitStatus
		pid, err := unix.Wait4(-1, &ws, unix.WALL, nil)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return // ECHILD: the source stub, which lives as long as the sandbox, is gone
		}
		r.mu.Lock()
		s := r.stubs[pid]
		if s == nil {
			r.early[pid] = true
		}
		delete(r.stubs, pid)
		r.mu.Unlock()
		if s != nil {
			s.markDead()
		}
	}
}

// markDead wakes everything waiting on the stub. The stub's control-file
// units are freed by their owners once they have seen it dead (release).
func (s *stubProcess) markDead() {
	if s.dead.Swap(true) {
		return
	}
	c := s.p.ctl
	futexWake(c.u32(s.unit + 4096 + resAck))
	s.mu.Lock()
	for _, t := range s.threads {
		atomic.StoreUint32(t.word(tsState), threadDead)
		futexWake(t.word(tsState))
		atomic.StoreUint32(t.word(tsTID), 0)
		futexWake(t.word(tsTID))
	}
	s.mu.Unlock()
	s.finish()
}
