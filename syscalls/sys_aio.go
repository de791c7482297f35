package syscalls

import (
	"time"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/sentry/arch"
	"github.com/moat-sandbox/moat/sentry/fs/eventfd"
	"github.com/moat-sandbox/moat/sentry/kernel"
	"github.com/moat-sandbox/moat/sentry/vfs"
)

// struct iocb's opcodes and flags (Linux's <linux/aio_abi.h>).
const (
	iocbCmdPread   = 0
	iocbCmdPwrite  = 1
	iocbCmdFsync   = 2
	iocbCmdFdsync  = 3
	iocbCmdPoll    = 5
	iocbCmdPreadv  = 7
	iocbCmdPwritev = 8
	iocbFlagResfd  = 1 << 0
	iocbFlagIoprio = 1 << 1
	iocbSize       = 64
	iocbKeyOff     = 8
)

// iocb is struct iocb, as x86-64 lays it out.
type iocb struct {
	Data      uint64
	Key       uint32
	RWFlags   int32
	Opcode    uint16
	Reqprio   int16
	Fildes    uint32
	Buf       uint64
	Nbytes    uint64
	Offset    int64
	Reserved2 uint64
	Flags     uint32
	Resfd     uint32
}

// IoSetup implements Linux syscall io_setup(2): the context's id is the
// address of its ring in the caller's memory.
func IoSetup(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	nr, idp := a.Uint(0), a.Ptr(1)
	var id uint64
	if err := copyInStruct(t, idp, &id); err != nil {
		return 0, err
	}
	if id != 0 {
		return 0, unix.EINVAL
	}
	ring, err := t.AIOSetup(nr)
	if err != nil {
		return 0, err
	}
	if err := copyOutU64(t, idp, uint64(ring)); err != nil {
		t.AIODestroy(ring)
		return 0, err
	}
	return 0, nil
}

// IoDestroy implements Linux syscall io_destroy(2).
func IoDestroy(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	return 0, t.AIODestroy(a.Ptr(0))
}

// IoSubmit implements Linux syscall io_submit(2). Each operation is done
// at once, its event put on the ring (and the eventfd of IOCB_FLAG_RESFD
// signalled) before the next; the result is how many were submitted, or
// the first one's error. A ring with no room left is EAGAIN.
func IoSubmit(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	ctx, nr, list := a.Ptr(0), a.Int64(1), a.Ptr(2)
	if nr < 0 {
		return 0, unix.EINVAL
	}
	c, err := t.AIOContextOf(ctx)
	if err != nil {
		return 0, err
	}
	done := 0
	for ; done < int(nr); done++ {
		var p uint64
		if err = copyInStruct(t, list+uintptr(done)*8, &p); err != nil {
			break
		}
		if err = submitIocb(t, c, uintptr(p)); err != nil {
			break
		}
	}
	if done > 0 {
		return uintptr(done), nil
	}
	return 0, err
}

// submitIocb does the operation of the struct iocb at addr, with Linux's
// checks in io_submit_one's order: what fails them fails the submission;
// the I/O's own result, an error too, is the event's res.
func submitIocb(t *kernel.Task, c *kernel.AIOContext, addr uintptr) error {
	var cb iocb
	if err := copyInStruct(t, addr, &cb); err != nil {
		return err
	}
	if cb.Reserved2 != 0 || int64(cb.Nbytes) < 0 {
		return unix.EINVAL
	}
	if err := c.Reserve(); err != nil {
		return err
	}
	res, efd, err := startIocb(t, addr, &cb)
	if err != nil {
		c.Release()
		return err
	}
	c.Complete([4]uint64{cb.Data, uint64(addr), uint64(res()), 0})
	if efd != nil {
		efd.Signal(1)
	}
	return nil
}

// startIocb checks an operation and returns the work that does it, whose
// result (bytes or -errno) is the event's, and the eventfd to signal.
func startIocb(t *kernel.Task, addr uintptr, cb *iocb) (func() int64, *eventfd.File, error) {
	f, err := t.FDs().Get(int32(cb.Fildes))
	if err != nil {
		return nil, nil, err
	}
	var efd *eventfd.File
	if cb.Flags&iocbFlagResfd != 0 {
		ef, err := t.FDs().Get(int32(cb.Resfd))
		if err != nil {
			f.DecRef()
			return nil, nil, err
		}
		efd, _ = ef.Impl().(*eventfd.File)
		ef.DecRef() // the eventfd's file lives on in efd's own right
		if efd == nil {
			f.DecRef()
			return nil, nil, unix.EINVAL
		}
	}
	if err := copyOutU32(t, addr+iocbKeyOff, 0); err != nil { // KIOCB_KEY
		f.DecRef()
		return nil, nil, unix.EFAULT
	}
	work, err := startOp(t, f, cb)
	return work, efd, err
}

// startOp checks the operation of cb on f and returns its work, which
// holds f's reference (dropped here if the check fails).
func startOp(t *kernel.Task, f *vfs.File, cb *iocb) (func() int64, error) {
	switch cb.Opcode {
	case iocbCmdPread, iocbCmdPreadv, iocbCmdPwrite, iocbCmdPwritev:
		return startRW(t, f, cb)
	case iocbCmdFsync, iocbCmdFdsync:
		defer f.DecRef()
		if cb.Buf != 0 || cb.Offset != 0 || cb.Nbytes != 0 || cb.RWFlags != 0 {
			return nil, unix.EINVAL
		}
		return func() int64 {
			_, err := fsyncFile(f)
			return errResult(0, err)
		}, nil
	}
	f.DecRef()
	return nil, unix.EINVAL // IOCB_CMD_POLL and unknown opcodes
}

// startRW checks a read or write of f and returns it, f's reference with
// it.
func startRW(t *kernel.Task, f *vfs.File, cb *iocb) (func() int64, error) {
	write := cb.Opcode == iocbCmdPwrite || cb.Opcode == iocbCmdPwritev
	vectored := cb.Opcode == iocbCmdPreadv || cb.Opcode == iocbCmdPwritev
	fail := func(err error) (func() int64, error) { f.DecRef(); return nil, err }
	if (write && !f.Writable()) || (!write && !f.Readable()) {
		return fail(unix.EBADF)
	}
	if cb.Flags&iocbFlagIoprio == 0 && cb.RWFlags != 0 {
		st, err := f.Stat()
		if err != nil {
			return fail(err)
		}
		if _, err := checkRWFlags(int(cb.RWFlags), write, st.Type(), unix.Major(st.Rdev)); err != nil {
			return fail(err)
		}
	}
	var s *vfs.IOSeq
	if vectored {
		ranges, err := copyInIovecs(t, uintptr(cb.Buf), cb.Nbytes)
		if err != nil {
			return fail(err)
		}
		s = vfs.NewIOSeqRanges(t.MM(), ranges).WithContext(t)
	} else {
		if err := userRange(cb.Buf, cb.Nbytes); err != nil {
			return fail(err)
		}
		s = ioseq(t, uintptr(cb.Buf), cb.Nbytes)
	}
	_, seekable := f.Impl().(vfs.Seeker)
	if seekable && cb.Offset < 0 {
		return fail(unix.EINVAL)
	}
	op := withRWFlags(int(cb.RWFlags), write, func(f *vfs.File, s *vfs.IOSeq, mode vfs.AppendMode) (int, error) {
		switch {
		case write && seekable:
			return f.PwriteAppend(s, cb.Offset, mode)
		case write:
			return f.Write(s)
		case seekable:
			return f.Pread(s, cb.Offset)
		}
		return f.Read(s)
	})
	return func() int64 {
		defer f.DecRef()
		n, err := op(f, s)
		return errResult(int64(n), err)
	}, nil
}

// errResult is an event's res: the bytes moved, or -errno for an error
// (a call a signal interrupted is EINTR: an event is never restarted).
func errResult(n int64, err error) int64 {
	if err == nil {
		return n
	}
	if n > 0 {
		return n
	}
	switch err {
	case kernel.ERESTARTSYS, kernel.ERESTARTNOINTR, kernel.ERESTARTNOHAND:
		return -int64(unix.EINTR)
	}
	if e, ok := err.(unix.Errno); ok {
		return -int64(e)
	}
	return -int64(unix.EIO)
}

// IoCancel implements Linux syscall io_cancel(2). Nothing is ever in
// flight (operations complete at submit, and Linux cancels none of those
// on files either): a valid request is EINVAL, as Linux answers for one it
// cannot cancel.
func IoCancel(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	ctx, cbAddr := a.Ptr(0), a.Ptr(1)
	var key uint32
	if err := copyInStruct(t, cbAddr+iocbKeyOff, &key); err != nil {
		return 0, err
	}
	if _, err := t.AIOContextOf(ctx); err != nil {
		return 0, err
	}
	return 0, unix.EINVAL
}

// IoGetevents implements Linux syscall io_getevents(2).
func IoGetevents(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	return getevents(t, a.Ptr(0), a.Int64(1), a.Int64(2), a.Ptr(3), a.Ptr(4))
}

// IoPgetevents implements Linux syscall io_pgetevents(2): io_getevents
// with a signal mask to wait with, as ppoll's.
func IoPgetevents(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	if usig := a.Ptr(5); usig != 0 {
		var sig struct{ Mask, Size uint64 }
		if err := copyInStruct(t, usig, &sig); err != nil {
			return 0, err
		}
		if err := tempMask(t, uintptr(sig.Mask), sig.Size); err != nil {
			return 0, err
		}
		n, err := getevents(t, a.Ptr(0), a.Int64(1), a.Int64(2), a.Ptr(3), a.Ptr(4))
		endTempMask(t, err)
		return n, err
	}
	return getevents(t, a.Ptr(0), a.Int64(1), a.Int64(2), a.Ptr(3), a.Ptr(4))
}

// getevents is io_getevents' work, with Linux's order of checks: the
// timeout is read first (EFAULT), then the context (EINVAL), then the
// counts (EINVAL). The timeout is relative, and not checked further: a
// negative one has passed.
func getevents(t *kernel.Task, ctx uintptr, minNr, nr int64, events, timeout uintptr) (uintptr, error) {
	var deadline time.Time
	if timeout != 0 {
		var ts unix.Timespec
		if err := copyInStruct(t, timeout, &ts); err != nil {
			return 0, err
		}
		deadline = time.Now().Add(max(timespecDuration(ts), 0))
	}
	c, err := t.AIOContextOf(ctx)
	if err != nil {
		return 0, err
	}
	if minNr < 0 || nr < 0 || minNr > nr {
		return 0, unix.EINVAL
	}
	n, err := t.AIOGetEvents(c, int(minNr), int(nr), deadline, func(i int, ev []byte) error {
		_, err := t.CopyOut(events+uintptr(i)*kernel.AIOEventSize, ev)
		return err
	})
	return retErr(uintptr(n), err)
}
