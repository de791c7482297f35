package syscalls

import (
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/internal/linuxabi"
	"github.com/moat-sandbox/moat/sentry/arch"
	"github.com/moat-sandbox/moat/sentry/kernel"
	"github.com/moat-sandbox/moat/sentry/vfs"
	"github.com/moat-sandbox/moat/sentry/waiter"
)

// pollFD is struct pollfd.
type pollFD struct {
	FD      int32
	Events  int16
	Revents int16
}

// alwaysReady is what a file that cannot block (a regular file, a device)
// reports: ready for anything.
const alwaysReady = waiter.ReadableEvents | waiter.WritableEvents

// readiness of f for mask, for files that do not say (always ready).
func readiness(f *vfs.File, mask waiter.EventMask) waiter.EventMask {
	if w, ok := f.Impl().(waiter.Waitable); ok {
		return w.Readiness(mask)
	}
	return alwaysReady & mask
}

// pollFiles is the heart of poll, select and their variants: it fills in
// revents until one is non-zero, the deadline passes (zero: at once; nil
// never) or a signal interrupts. always are the events reported whether
// asked for or not: POLLERR and POLLHUP for poll, none for select, whose
// sets say exactly what they wait for.
func pollFiles(t *kernel.Task, fds []pollFD, deadline *time.Time, always waiter.EventMask) (int, error) {
	files := make([]*vfs.File, len(fds))
	defer func() {
		for _, f := range files {
			if f != nil {
				f.DecRef()
			}
		}
	}()
	for i := range fds {
		if fds[i].FD >= 0 {
			files[i], _ = t.FDs().Get(fds[i].FD)
		}
	}
	var entries []struct {
		w waiter.Waitable
		e *waiter.Entry
	}
	defer func() {
		for _, x := range entries {
			x.w.EventUnregister(x.e)
		}
	}()
	ch := make(chan struct{}, 1)
	for first := true; ; first = false {
		n := 0
		for i := range fds {
			fds[i].Revents = 0
			switch {
			case fds[i].FD < 0:
				continue
			case files[i] == nil:
				fds[i].Revents = int16(waiter.EventNVal)
			default:
				mask := waiter.EventMask(uint16(fds[i].Events)) | always
				fds[i].Revents = int16(readiness(files[i], mask) & mask)
			}
			if fds[i].Revents != 0 {
				n++
			}
		}
		if n > 0 || (deadline != nil && !time.Now().Before(*deadline)) {
			return n, nil
		}
		if first {
			for i, f := range files {
				if f == nil {
					continue
				}
				if w, ok := f.Impl().(waiter.Waitable); ok {
					e := &waiter.Entry{Mask: waiter.EventMask(uint16(fds[i].Events)) | always,
						Callback: func(waiter.EventMask) {
							select {
							case ch <- struct{}{}:
							default:
							}
						}}
					w.EventRegister(e)
					entries = append(entries, struct {
						w waiter.Waitable
						e *waiter.Entry
					}{w, e})
				}
			}
			continue // look again: an event may have come before the entries
		}
		var err error
		if deadline == nil {
			err = t.Block(ch)
		} else {
			err = t.BlockUntil(ch, *deadline)
		}
		if err == unix.ETIMEDOUT {
			return 0, nil
		}
		if err != nil {
			return 0, kernel.ERESTARTNOHAND
		}
	}
}

// Poll implements Linux syscall poll(2).
func Poll(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	var deadline *time.Time
	if ms := a.Int(2); ms >= 0 {
		d := time.Now().Add(time.Duration(ms) * time.Millisecond)
		deadline = &d
	}
	return doPoll(t, a.Ptr(0), a[1], deadline)
}

// Ppoll implements Linux syscall ppoll(2).
func Ppoll(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	deadline, err := timespecDeadline(t, a.Ptr(2))
	if err != nil {
		return 0, err
	}
	if err := tempMask(t, a.Ptr(3), a[4]); err != nil {
		return 0, err
	}
	n, err := doPoll(t, a.Ptr(0), a[1], deadline)
	endTempMask(t, err)
	return n, writeBackTimespec(t, a.Ptr(2), deadline, err)
}

// writeBackTimespec stores the time left in a ppoll or pselect6 timeout.
func writeBackTimespec(t *kernel.Task, addr uintptr, deadline *time.Time, err error) error {
	return writeBackTimeout(t, addr, deadline, err, false)
}

// writeBackTimeout stores the time left in a select (a timeval), pselect6
// or ppoll timeout (a timespec) whatever the call's result, errors
// included, as Linux's poll_select_finish does (the C library hides it
// from callers that do not want it), microseconds cut, not rounded. A
// timeout the guest cannot write is left as it is: the call's result
// stands, but a call to restart becomes EINTR, since its restart would
// wait the whole timeout again.
func writeBackTimeout(t *kernel.Task, addr uintptr, deadline *time.Time, err error, timeval bool) error {
	if addr == 0 || deadline == nil {
		return err
	}
	left := int64(max(time.Until(*deadline), 0))
	var cerr error
	if timeval {
		tv := unix.Timeval{Sec: left / 1e9, Usec: left % 1e9 / 1e3}
		cerr = copyOutStruct(t, addr, &tv)
	} else {
		ts := unix.NsecToTimespec(left)
		cerr = copyOutStruct(t, addr, &ts)
	}
	if cerr != nil && err == kernel.ERESTARTNOHAND {
		return unix.EINTR
	}
	return err
}

func doPoll(t *kernel.Task, addr uintptr, nfds uint64, deadline *time.Time) (uintptr, error) {
	if nfds > nofile(t) || nfds > 1<<20 {
		return 0, unix.EINVAL
	}
	fds := make([]pollFD, nfds)
	if nfds > 0 {
		if _, err := t.CopyIn(addr, unsafe.Slice((*byte)(unsafe.Pointer(&fds[0])), 8*nfds)); err != nil {
			return 0, err
		}
	}
	n, err := pollFiles(t, fds, deadline, waiter.EventErr|waiter.EventHUp)
	if err != nil {
		return 0, err
	}
	if nfds > 0 {
		if _, err := t.CopyOut(addr, unsafe.Slice((*byte)(unsafe.Pointer(&fds[0])), 8*nfds)); err != nil {
			return 0, err
		}
	}
	return uintptr(n), nil
}

// timespecDeadline reads an optional relative timeout.
func timespecDeadline(t *kernel.Task, addr uintptr) (*time.Time, error) {
	if addr == 0 {
		return nil, nil
	}
	ts, err := copyInTimespec(t, addr)
	if err != nil {
		return nil, err
	}
	d := time.Now().Add(timespecDuration(ts))
	return &d, nil
}

// tempMask applies the signal mask ppoll and pselect6 wait with.
func tempMask(t *kernel.Task, maskAddr uintptr, size uint64) error {
	if maskAddr == 0 {
		return nil
	}
	if size != linuxabi.SizeofSigset {
		return unix.EINVAL
	}
	var m uint64
	if err := copyInStruct(t, maskAddr, &m); err != nil {
		return err
	}
	t.SetTemporaryMask(m)
	return nil
}

// endTempMask ends the mask tempMask applied, as the call returns. A call
// a signal interrupted keeps it until the signal is handled: the handler's
// frame saves the mask from before the call (Linux's
// restore_saved_sigmask_unless). Any other return restores it now, errors
// included, or the guest would go on with the mask it only waited with.
func endTempMask(t *kernel.Task, err error) {
	switch err {
	case kernel.ERESTARTNOHAND, kernel.ERESTARTSYS, kernel.ERESTARTNOINTR, unix.EINTR:
		return
	}
	t.RestoreTemporaryMask()
}

// Select implements Linux syscall select(2).
func Select(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	var deadline *time.Time
	tvAddr := a.Ptr(4)
	if tvAddr != 0 {
		var tv unix.Timeval
		if err := copyInStruct(t, tvAddr, &tv); err != nil {
			return 0, err
		}
		if !validTimeval(tv) {
			return 0, unix.EINVAL
		}
		d := time.Now().Add(timevalDuration(tv))
		deadline = &d
	}
	n, err := doSelect(t, a, deadline)
	return n, writeBackTimeout(t, tvAddr, deadline, err, true)
}

// Pselect6 implements Linux syscall pselect6(2).
func Pselect6(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	deadline, err := timespecDeadline(t, a.Ptr(4))
	if err != nil {
		return 0, err
	}
	if a[5] != 0 {
		// struct { const sigset_t *ss; size_t ss_len; }
		var sm [2]uint64
		if err := copyInStruct(t, a.Ptr(5), &sm); err != nil {
			return 0, err
		}
		if err := tempMask(t, uintptr(sm[0]), sm[1]); err != nil {
			return 0, err
		}
	}
	n, err := doSelect(t, a, deadline)
	endTempMask(t, err)
	return n, writeBackTimespec(t, a.Ptr(4), deadline, err)
}

// doSelect runs select on the fd_sets at a[1], a[2], a[3] for a[0] fds.
func doSelect(t *kernel.Task, a *arch.SyscallArgs, deadline *time.Time) (uintptr, error) {
	// nfds is bounded by the fd table, not by RLIMIT_NOFILE: bits for fds
	// past the table are neither looked at nor cleared, as on Linux.
	nfds := int(a.Int(0))
	if nfds < 0 {
		return 0, unix.EINVAL
	}
	nfds = min(nfds, t.FDs().Capacity())
	words := (nfds + 63) / 64
	sets := [3][]uint64{}
	for i := range sets {
		if a[1+i] == 0 {
			continue
		}
		sets[i] = make([]uint64, words)
		if words > 0 {
			if _, err := t.CopyIn(a.Ptr(1+i), u64s(sets[i])); err != nil {
				return 0, err
			}
		}
	}
	const (
		in  = waiter.ReadableEvents | waiter.EventHUp | waiter.EventErr
		out = waiter.WritableEvents | waiter.EventErr
		pri = waiter.EventPri
	)
	var fds []pollFD
	for fd := 0; fd < nfds; fd++ {
		var ev waiter.EventMask
		for i, m := range []waiter.EventMask{in, out, pri} {
			if sets[i] != nil && sets[i][fd/64]&(1<<(fd%64)) != 0 {
				ev |= m
			}
		}
		if ev != 0 {
			fds = append(fds, pollFD{FD: int32(fd), Events: int16(ev)})
		}
	}
	if _, err := pollFiles(t, fds, deadline, 0); err != nil {
		return 0, err
	}
	for i := range sets {
		clear(sets[i])
	}
	n := 0
	for _, p := range fds {
		r := waiter.EventMask(uint16(p.Revents))
		if r&waiter.EventNVal != 0 {
			return 0, unix.EBADF
		}
		fd := int(p.FD)
		for i, m := range []waiter.EventMask{in, out, pri} {
			if sets[i] != nil && waiter.EventMask(uint16(p.Events))&m != 0 && r&m != 0 {
				sets[i][fd/64] |= 1 << (fd % 64)
				n++
			}
		}
	}
	for i := range sets {
		if sets[i] != nil && words > 0 {
			if _, err := t.CopyOut(a.Ptr(1+i), u64s(sets[i])); err != nil {
				return 0, err
			}
		}
	}
	return uintptr(n), nil
}

func u64s(v []uint64) []byte { return unsafe.Slice((*byte)(unsafe.Pointer(&v[0])), 8*len(v)) }
