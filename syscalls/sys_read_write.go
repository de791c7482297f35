package syscalls

import (
	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/internal/linuxabi"
	"github.com/moat-sandbox/moat/sentry/arch"
	"github.com/moat-sandbox/moat/sentry/kernel"
	"github.com/moat-sandbox/moat/sentry/vfs"
)

// Read implements Linux syscall read(2).
func Read(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	return transfer(t, a, readable, func(f *vfs.File, s *vfs.IOSeq) (int, error) { return f.Read(s) })
}

// Write implements Linux syscall write(2).
func Write(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	return transfer(t, a, writable, func(f *vfs.File, s *vfs.IOSeq) (int, error) { return f.Write(s) })
}

// Pread64 implements Linux syscall pread64(2).
func Pread64(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	off := a.Int64(3)
	if off < 0 {
		return 0, unix.EINVAL
	}
	return transfer(t, a, positioned(readable), func(f *vfs.File, s *vfs.IOSeq) (int, error) { return f.Pread(s, off) })
}

// Pwrite64 implements Linux syscall pwrite64(2).
func Pwrite64(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	off := a.Int64(3)
	if off < 0 {
		return 0, unix.EINVAL
	}
	return transfer(t, a, positioned(writable), func(f *vfs.File, s *vfs.IOSeq) (int, error) { return f.Pwrite(s, off) })
}

// Readv implements Linux syscall readv(2).
func Readv(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	return vectored(t, a, readable, func(f *vfs.File, s *vfs.IOSeq) (int, error) { return f.Read(s) })
}

// Writev implements Linux syscall writev(2).
func Writev(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	return vectored(t, a, writable, func(f *vfs.File, s *vfs.IOSeq) (int, error) { return f.Write(s) })
}

// Preadv implements Linux syscall preadv(2).
func Preadv(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	off := a.Int64(3)
	if off < 0 {
		return 0, unix.EINVAL
	}
	return vectored(t, a, positioned(readable), func(f *vfs.File, s *vfs.IOSeq) (int, error) { return f.Pread(s, off) })
}

// Pwritev implements Linux syscall pwritev(2).
func Pwritev(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	off := a.Int64(3)
	if off < 0 {
		return 0, unix.EINVAL
	}
	return vectored(t, a, positioned(writable), func(f *vfs.File, s *vfs.IOSeq) (int, error) { return f.Pwrite(s, off) })
}

// readable, writable and positioned are what Linux checks of a file
// before it looks at a transfer's buffers: a negative offset first (in
// the callers), then the fd, then a file without offsets for a call that
// takes one (ESPIPE), then the access mode (EBADF).
func readable(f *vfs.File) error {
	if !f.Readable() {
		return unix.EBADF
	}
	return nil
}

func writable(f *vfs.File) error {
	if !f.Writable() {
		return unix.EBADF
	}
	return nil
}

func positioned(check func(*vfs.File) error) func(*vfs.File) error {
	return func(f *vfs.File) error {
		if _, ok := f.Impl().(vfs.Seeker); !ok {
			return unix.ESPIPE
		}
		return check(f)
	}
}

// userRange is Linux's access_ok: a buffer that ends past the user
// address space (or wraps) is EFAULT before anything moves.
func userRange(addr, n uint64) error {
	if end := addr + n; end < addr || end > linuxabi.TASK_SIZE_MAX {
		return unix.EFAULT
	}
	return nil
}

// transfer runs op on the buffer of a read-style call, once check passed
// and the buffer is in user memory.
func transfer(t *kernel.Task, a *arch.SyscallArgs, check func(*vfs.File) error,
	op func(*vfs.File, *vfs.IOSeq) (int, error)) (uintptr, error) {
	f, err := t.FDs().Get(a.Int(0))
	if err != nil {
		return 0, err
	}
	defer f.DecRef()
	if err := check(f); err != nil {
		return 0, err
	}
	if err := userRange(a[1], a[2]); err != nil {
		return 0, err
	}
	n, err := op(f, ioseq(t, a.Ptr(1), a[2]))
	return retErr(uintptr(n), err)
}

// ioseq is the guest buffer of a read or write, with its length clamped as
// Linux clamps it.
func ioseq(t *kernel.Task, addr uintptr, n uint64) *vfs.IOSeq {
	return vfs.NewIOSeq(t.MM(), addr, int(min(n, linuxabi.MAX_RW_COUNT))).WithContext(t)
}

// vectored reads the iovec array of a readv-style call, once check
// passed, and runs op on it.
func vectored(t *kernel.Task, a *arch.SyscallArgs, check func(*vfs.File) error,
	op func(*vfs.File, *vfs.IOSeq) (int, error)) (uintptr, error) {
	f, err := t.FDs().Get(a.Int(0))
	if err != nil {
		return 0, err
	}
	defer f.DecRef()
	if err := check(f); err != nil {
		return 0, err
	}
	ranges, err := copyInIovecs(t, a.Ptr(1), a[2])
	if err != nil {
		return 0, err
	}
	n, err := op(f, vfs.NewIOSeqRanges(t.MM(), ranges).WithContext(t))
	return retErr(uintptr(n), err)
}

// copyInIovecs reads an array of struct iovec.
func copyInIovecs(t *kernel.Task, addr uintptr, count uint64) ([]vfs.Range, error) {
	if count > linuxabi.UIO_MAXIOV {
		return nil, unix.EINVAL
	}
	// struct iovec: base and length.
	type iovec struct{ Base, Len uint64 }
	raw := make([]iovec, count)
	for i := range raw {
		if err := copyInStruct(t, addr+uintptr(i)*16, &raw[i]); err != nil {
			return nil, err
		}
	}
	// As Linux's import_iovec: a negative length anywhere is EINVAL, then
	// a range that ends past the user address space is EFAULT (access_ok;
	// a lone iovec is clamped to MAX_RW_COUNT first, as import_ubuf
	// does), before anything moves.
	for _, v := range raw {
		if int64(v.Len) < 0 {
			return nil, unix.EINVAL
		}
	}
	for _, v := range raw {
		n := v.Len
		if count == 1 {
			n = min(n, linuxabi.MAX_RW_COUNT)
		}
		if err := userRange(v.Base, n); err != nil {
			return nil, err
		}
	}
	ranges := make([]vfs.Range, 0, count)
	total := uint64(0)
	for _, v := range raw {
		// The total is clamped to MAX_RW_COUNT, not refused.
		n := min(v.Len, linuxabi.MAX_RW_COUNT-total)
		total += n
		ranges = append(ranges, vfs.Range{Addr: uintptr(v.Base), Len: int(n)})
	}
	return ranges, nil
}

// Sendfile implements Linux syscall sendfile(2), through a sentry buffer.
func Sendfile(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	out, err := t.FDs().Get(a.Int(0))
	if err != nil {
		return 0, err
	}
	defer out.DecRef()
	in, err := t.FDs().Get(a.Int(1))
	if err != nil {
		return 0, err
	}
	defer in.DecRef()
	if !in.Readable() || !out.Writable() {
		return 0, unix.EBADF
	}
	if out.Flags()&unix.O_APPEND != 0 {
		return 0, unix.EINVAL
	}
	offAddr, count := a.Ptr(2), min(a[3], linuxabi.MAX_RW_COUNT)
	var off int64
	if offAddr != 0 {
		if err := copyInStruct(t, offAddr, &off); err != nil {
			return 0, err
		}
		if off < 0 {
			return 0, unix.EINVAL
		}
	}
	if err := sendfileSource(in, offAddr != 0); err != nil {
		return 0, err
	}
	buf := copyBuffer(int(min(count, spliceChunk)))
	defer putCopyBuffer(buf)
	done := uint64(0)
	for done < count {
		if done > 0 && t.Interrupted() {
			// A signal, a stop or the task's exit waits on this copy of up
			// to 2 GiB: it ends with what it moved, as Linux's does when a
			// signal is pending.
			break
		}
		chunk := buf[:min(uint64(len(buf)), count-done)]
		var n int
		if offAddr != 0 {
			n, err = in.Pread(vfs.NewIOSeqBuffer(chunk).WithContext(t), off+int64(done))
		} else {
			n, err = in.Read(vfs.NewIOSeqBuffer(chunk).WithContext(t))
		}
		if n == 0 || err != nil {
			break
		}
		w, werr := out.Write(vfs.NewIOSeqBuffer(chunk[:n]).WithContext(t))
		done += uint64(w)
		if w < n && offAddr == 0 {
			// Only what was written counts as read: the rest goes back.
			in.Seek(int64(w-n), unix.SEEK_CUR)
		}
		if werr != nil {
			err = werr
			break
		}
		if w < n || n < len(chunk) {
			break // a short write or read ends the copy
		}
	}
	if offAddr != 0 {
		if err := copyOutU64(t, offAddr, uint64(off)+done); err != nil {
			return 0, err
		}
	}
	if done == 0 && err != nil {
		return 0, err
	}
	return uintptr(done), nil
}

// sendfileSource says whether Linux's sendfile reads from in: only a
// file that can be read at an offset (a regular file, a block device,
// /dev/zero, /dev/full, /dev/random, /dev/urandom; not /dev/null) has the
// splice_read it needs. A pipe
// or a socket with an offset is ESPIPE, as they cannot be read at one;
// without, they, directories, ttys and eventfds are EINVAL, before anything
// is read. Go's io.Copy from an os.Pipe to a socket tries sendfile first
// and falls back to read and write on EINVAL; on the EAGAIN of an empty
// pipe it waits for the socket to become writable, which it already is.
func sendfileSource(in *vfs.File, withOffset bool) error {
	st, err := in.Stat()
	if err != nil {
		return err
	}
	switch st.Type() {
	case unix.S_IFREG, unix.S_IFBLK:
		if !vfs.SpliceReadable(in.Impl()) {
			return unix.EINVAL
		}
		return nil
	case unix.S_IFCHR:
		if unix.Major(st.Rdev) == memDevMajor && splicedMemDevs[unix.Minor(st.Rdev)] {
			return nil
		}
	case unix.S_IFIFO, unix.S_IFSOCK:
		if withOffset {
			return unix.ESPIPE
		}
	}
	return unix.EINVAL
}

// memDevMajor is the major number of Linux's memory devices (/dev/null,
// /dev/zero, /dev/full, /dev/random, /dev/urandom).
const memDevMajor = 1

// splicedMemDevs are the minors of the memory devices sendfile reads:
// zero, full, random and urandom.
var splicedMemDevs = map[uint32]bool{5: true, 7: true, 8: true, 9: true}

// Lseek implements Linux syscall lseek(2).
func Lseek(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	f, err := t.FDs().Get(a.Int(0))
	if err != nil {
		return 0, err
	}
	defer f.DecRef()
	off, err := f.Seek(a.Int64(1), int(a.Int(2)))
	return retErr(uintptr(off), err)
}

// Preadv2 implements Linux syscall preadv2(2): preadv with RWF_* flags;
// offset -1 reads at the file offset and moves it, as readv does.
func Preadv2(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	off, flags := a.Int64(3), int(a.Int(5))
	if off == -1 {
		return vectored(t, a, readable, withRWFlags(flags, false, func(f *vfs.File, s *vfs.IOSeq, _ vfs.AppendMode) (int, error) {
			return f.Read(s)
		}))
	}
	if off < 0 {
		return 0, unix.EINVAL
	}
	return vectored(t, a, positioned(readable), withRWFlags(flags, false, func(f *vfs.File, s *vfs.IOSeq, _ vfs.AppendMode) (int, error) {
		return f.Pread(s, off)
	}))
}

// Pwritev2 implements Linux syscall pwritev2(2): pwritev with RWF_*
// flags; offset -1 writes at the file offset and moves it, as writev does.
func Pwritev2(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	off, flags := a.Int64(3), int(a.Int(5))
	if off == -1 {
		return vectored(t, a, writable, withRWFlags(flags, true, func(f *vfs.File, s *vfs.IOSeq, mode vfs.AppendMode) (int, error) {
			return f.WriteAppend(s, mode)
		}))
	}
	if off < 0 {
		return 0, unix.EINVAL
	}
	return vectored(t, a, positioned(writable), withRWFlags(flags, true, func(f *vfs.File, s *vfs.IOSeq, mode vfs.AppendMode) (int, error) {
		return f.PwriteAppend(s, off, mode)
	}))
}

// withRWFlags applies preadv2's flags around op, as Linux's vfs_readv and
// kiocb_set_rw_flags do: a transfer of no bytes answers 0 whatever the
// flags, then they are checked against the file, then RWF_NOWAIT makes
// the I/O fail with EAGAIN where it would wait, RWF_NOSIGNAL spares
// SIGPIPE, RWF_APPEND and RWF_NOAPPEND set where a write lands, and
// RWF_SYNC and RWF_DSYNC sync the file after a write. RWF_HIPRI only
// polls direct I/O on Linux and changes nothing here.
func withRWFlags(flags int, write bool, op func(*vfs.File, *vfs.IOSeq, vfs.AppendMode) (int, error)) func(*vfs.File, *vfs.IOSeq) (int, error) {
	return func(f *vfs.File, s *vfs.IOSeq) (int, error) {
		if s.Len() == 0 {
			return 0, nil
		}
		st, err := f.Stat()
		if err != nil {
			return 0, err
		}
		mode, err := checkRWFlags(flags, write, st.Type(), unix.Major(st.Rdev))
		if err != nil {
			return 0, err
		}
		if flags&unix.RWF_NOWAIT != 0 {
			s.WithNoWait()
		}
		if flags&unix.RWF_NOSIGNAL != 0 {
			s.WithNoSignal()
		}
		n, err := op(f, s, mode)
		if err == nil && write && flags&(unix.RWF_SYNC|unix.RWF_DSYNC) != 0 {
			if sy, ok := f.Impl().(vfs.Syncer); ok {
				err = sy.Sync()
			}
		}
		return n, err
	}
}

// checkRWFlags is Linux's answer to preadv2's flags for a file of type
// typ (S_IFMT) and, for a device, major number major; it says where a
// write lands. Directories (Linux's readv loop, for files without
// read_iter) take RWF_HIPRI alone. RWF_NOWAIT needs a file that can
// refuse to wait (Linux's FMODE_NOWAIT): pipes, sockets and the memory
// devices; tmpfs files, as moat's files, cannot. No file takes
// RWF_ATOMIC (a read never, a write only on a file system with atomic
// writes) or RWF_DONTCACHE (tmpfs has no page cache to drop).
func checkRWFlags(flags int, write bool, typ uint32, major uint32) (vfs.AppendMode, error) {
	switch {
	case flags&^unix.RWF_SUPPORTED != 0:
		return 0, unix.EOPNOTSUPP
	case typ == unix.S_IFDIR && flags&^unix.RWF_HIPRI != 0:
		return 0, unix.EOPNOTSUPP
	case flags&unix.RWF_APPEND != 0 && flags&unix.RWF_NOAPPEND != 0:
		return 0, unix.EINVAL
	case flags&(unix.RWF_ATOMIC|unix.RWF_DONTCACHE) != 0:
		return 0, unix.EOPNOTSUPP
	}
	if flags&unix.RWF_NOWAIT != 0 {
		canNowait := typ == unix.S_IFIFO || typ == unix.S_IFSOCK || typ == unix.S_IFCHR && major == memDevMajor
		if !canNowait {
			return 0, unix.EOPNOTSUPP
		}
	}
	switch {
	case !write:
		return vfs.AppendIfOpened, nil
	case flags&unix.RWF_APPEND != 0:
		return vfs.AppendAlways, nil
	case flags&unix.RWF_NOAPPEND != 0:
		return vfs.AppendNever, nil
	}
	return vfs.AppendIfOpened, nil
}
