package kernel

import (
	"time"

	"golang.org/x/sys/unix"
)

// Restart codes: a system call interrupted by a signal returns one of these;
// the task turns it into EINTR or a restart of the call, as Linux does,
// when it has decided what the signal does. The guest never sees them.
const (
	// ERESTARTSYS: restart if the handler has SA_RESTART (or there is no
	// handler), else EINTR.
	ERESTARTSYS = unix.Errno(512)
	// ERESTARTNOINTR: always restart.
	ERESTARTNOINTR = unix.Errno(513)
	// ERESTARTNOHAND: restart only if no handler runs, else EINTR.
	ERESTARTNOHAND = unix.Errno(514)
)

// isRestart reports whether errno is a restart code.
func isRestart(errno unix.Errno) bool {
	return errno == ERESTARTSYS || errno == ERESTARTNOINTR || errno == ERESTARTNOHAND
}

// Interrupted reports whether the task has something to attend to before
// it goes on (a signal to handle, a stop, its exit): a call that moves
// data in a loop stops there with what it has done, as Linux's loops do
// when a signal is pending.
func (t *Task) Interrupted() bool { return t.check.Load() }

// Block waits until ch is ready or the task is interrupted (a signal to
// handle, a stop or its exit), which gives ERESTARTSYS.
func (t *Task) Block(ch <-chan struct{}) error {
	if t.check.Load() {
		return ERESTARTSYS
	}
	select {
	case <-ch:
		return nil
	default:
	}
	t.park()
	select {
	case <-ch:
		return nil
	case <-t.interrupt:
		return ERESTARTSYS
	}
}

// park tells the platform that the task's guest thread waits for a while,
// so that no CPU spins waiting to resume it.
func (t *Task) park() {
	if t.ctx != nil {
		t.ctx.Park()
	}
}

// BlockUntil is Block with a deadline, after which it gives ETIMEDOUT. A
// zero deadline waits forever.
func (t *Task) BlockUntil(ch <-chan struct{}, deadline time.Time) error {
	if deadline.IsZero() {
		return t.Block(ch)
	}
	d := time.Until(deadline)
	if d <= 0 {
		select {
		case <-ch:
			return nil
		default:
			return unix.ETIMEDOUT
		}
	}
	if t.check.Load() {
		return ERESTARTSYS
	}
	t.park()
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-ch:
		return nil
	case <-t.interrupt:
		return ERESTARTSYS
	case <-timer.C:
		return unix.ETIMEDOUT
	}
}

// Sleep blocks for d; it gives ERESTARTSYS if interrupted first.
func (t *Task) Sleep(d time.Duration) error {
	if d <= 0 {
		return nil
	}
	err := t.BlockUntil(nil, time.Now().Add(d))
	if err == unix.ETIMEDOUT {
		return nil
	}
	return err
}

// kick makes the task look at its signals, stop or exit: it is woken from
// a blocking call and taken out of guest code.
func (t *Task) kick() {
	t.check.Store(true)
	select {
	case t.interrupt <- struct{}{}:
	default:
	}
	if t.ctx != nil {
		t.ctx.Interrupt()
	}
}
