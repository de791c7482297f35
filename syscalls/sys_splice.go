package syscalls

import (
	"sync"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/internal/linuxabi"
	"github.com/moat-sandbox/moat/sentry/arch"
	"github.com/moat-sandbox/moat/sentry/fs/pipe"
	"github.com/moat-sandbox/moat/sentry/kernel"
	"github.com/moat-sandbox/moat/sentry/vfs"
)

// The in-kernel copies: splice(2), tee(2) and vmsplice(2) move data to and
// from pipes, copy_file_range(2) between regular files. The data passes
// through a sentry buffer (a pipe's ring is the sentry's own memory, so
// nothing is gained by "moving pages").

// spliceFlags are SPLICE_F_MOVE, SPLICE_F_NONBLOCK, SPLICE_F_MORE and
// SPLICE_F_GIFT (Linux's SPLICE_F_ALL).
const spliceFlags = unix.SPLICE_F_MOVE | unix.SPLICE_F_NONBLOCK | unix.SPLICE_F_MORE | unix.SPLICE_F_GIFT

// spliceChunk bounds the sentry buffer of one step of a copy between
// files.
const spliceChunk = 1 << 16

// copyBuffers are the spliceChunk-byte buffers sendfile, splice, tee and
// copy_file_range move data through, reused across calls: a fresh one per
// call cost a 64 KiB allocation and its zeroing. A copy writes out only
// what it read into the buffer, so what a buffer held before never leaves.
var copyBuffers = sync.Pool{New: func() any { return new([spliceChunk]byte) }}

// copyBuffer returns a buffer of n bytes for one step of a copy: a pooled
// one when n fits spliceChunk (a pipe grown past 64 KiB may take more at
// once). putCopyBuffer gives it back.
func copyBuffer(n int) []byte {
	if n > spliceChunk {
		return make([]byte, n)
	}
	return copyBuffers.Get().(*[spliceChunk]byte)[:n]
}

func putCopyBuffer(b []byte) {
	if cap(b) == spliceChunk {
		copyBuffers.Put((*[spliceChunk]byte)(b[:spliceChunk]))
	}
}

// getFile is fdget: an O_PATH descriptor is no file for these calls.
func getFile(t *kernel.Task, fd int32) (*vfs.File, error) {
	f, err := t.FDs().Get(fd)
	if err != nil {
		return nil, err
	}
	if f.Flags()&unix.O_PATH != 0 {
		f.DecRef()
		return nil, unix.EBADF
	}
	return f, nil
}

func nonblocking(f *vfs.File) bool { return f.Flags()&unix.O_NONBLOCK != 0 }

// Splice implements Linux syscall splice(2).
func Splice(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	offInAddr, offOutAddr := a.Ptr(1), a.Ptr(3)
	length, flags := min(a[4], linuxabi.MAX_RW_COUNT), a.Uint(5)
	if length == 0 {
		return 0, nil
	}
	if flags&^spliceFlags != 0 {
		return 0, unix.EINVAL
	}
	in, err := getFile(t, a.Int(0))
	if err != nil {
		return 0, err
	}
	defer in.DecRef()
	out, err := getFile(t, a.Int(2))
	if err != nil {
		return 0, err
	}
	defer out.DecRef()
	ipipe, inIsPipe := pipe.Of(in.Impl())
	opipe, outIsPipe := pipe.Of(out.Impl())
	if inIsPipe && offInAddr != 0 || outIsPipe && offOutAddr != 0 {
		return 0, unix.ESPIPE
	}
	var offIn, offOut int64
	if offOutAddr != 0 {
		if err := copyInStruct(t, offOutAddr, &offOut); err != nil {
			return 0, err
		}
	}
	if offInAddr != 0 {
		if err := copyInStruct(t, offInAddr, &offIn); err != nil {
			return 0, err
		}
	}
	if !in.Readable() || !out.Writable() {
		return 0, unix.EBADF
	}
	nonblock := flags&unix.SPLICE_F_NONBLOCK != 0
	switch {
	case inIsPipe && outIsPipe:
		if ipipe.Same(opipe) {
			return 0, unix.EINVAL
		}
		return retErr(pipeToPipe(t, ipipe, opipe, int(length), nonblock || nonblocking(in) || nonblocking(out), false))
	case inIsPipe:
		if out.Flags()&unix.O_APPEND != 0 {
			return 0, unix.EINVAL
		}
		at, err := spliceOffset(out, offOutAddr, &offOut)
		if err != nil {
			return 0, err
		}
		n, err := pipeToFile(t, ipipe, out, at, int(length), nonblock || nonblocking(in))
		return spliceDone(t, n, err, offOutAddr, at)
	case outIsPipe:
		at, err := spliceOffset(in, offInAddr, &offIn)
		if err != nil {
			return 0, err
		}
		n, err := fileToPipe(t, in, at, opipe, int(length), nonblock || nonblocking(out))
		return spliceDone(t, n, err, offInAddr, at)
	}
	return 0, unix.EINVAL
}

// spliceOffset is the offset splice moves through the end that is not a
// pipe: nil (the file's own) when the caller gave none, else off, read
// from the caller, which needs a file with offsets and must not be
// negative (EINVAL, as for O_APPEND: Linux's checks give one errno).
func spliceOffset(f *vfs.File, addr uintptr, off *int64) (*int64, error) {
	if addr == 0 {
		return nil, nil
	}
	if !seekable(f) || *off < 0 {
		return nil, unix.EINVAL
	}
	return off, nil
}

// spliceDone ends a splice of n bytes: the offset the caller gave moves
// on with the bytes moved.
func spliceDone(t *kernel.Task, n int, err error, addr uintptr, at *int64) (uintptr, error) {
	if n > 0 && at != nil {
		if err := copyOutU64(t, addr, uint64(*at)); err != nil {
			return 0, err
		}
	}
	return retErr(uintptr(n), err)
}

func seekable(f *vfs.File) bool {
	_, ok := f.Impl().(vfs.Seeker)
	return ok
}

// fileToPipe is splice_file_to_pipe: once the pipe has room, as much of
// the file (from *at, or its offset) as fits, read a buffer at a time
// until the file has no more to give at once. Only the first read may
// wait: a socket that has given what it held ends the splice, as Linux's
// tcp_splice_read does.
func fileToPipe(t *kernel.Task, in *vfs.File, at *int64, out pipe.Pipe, n int, nonblock bool) (int, error) {
	if in.Path().Dentry.IsDir() {
		return 0, unix.EINVAL
	}
	room, err := out.WaitRoom(t, nonblock)
	if err != nil {
		return 0, err
	}
	if !vfs.SpliceReadable(in.Impl()) {
		return 0, unix.EINVAL // after the wait for room, as Linux's splice_file_to_pipe
	}
	want := min(n, room)
	buf := copyBuffer(min(want, spliceChunk))
	defer putCopyBuffer(buf)
	var ctx vfs.Context = t
	done := 0
	for done < want {
		chunk := buf[:min(want-done, len(buf))]
		var got int
		if at != nil {
			got, err = in.Pread(vfs.NewIOSeqBuffer(chunk).WithContext(ctx), *at)
		} else {
			got, err = in.Read(vfs.NewIOSeqBuffer(chunk).WithContext(ctx))
		}
		if got == 0 {
			break
		}
		put, perr := out.Put(chunk[:got])
		if put < got && at == nil && seekable(in) {
			in.Seek(int64(put-got), unix.SEEK_CUR) // what the pipe did not take stays in the file
		}
		if at != nil {
			*at += int64(put)
		}
		done += put
		if put < got || got < len(chunk) {
			break
		}
		if perr != nil {
			err = perr
			break
		}
		ctx = nil // the sentry's own I/O: it does not wait
	}
	if done == 0 {
		return 0, err
	}
	return done, nil
}

// pipeToFile is iter_file_splice_write: once the pipe has data (0 at its
// end), what it holds, up to n bytes, written to the file at *at or its
// offset; what the file does not take stays in the pipe.
func pipeToFile(t *kernel.Task, in pipe.Pipe, out *vfs.File, at *int64, n int, nonblock bool) (int, error) {
	done := 0
	for done < n {
		avail, err := in.WaitData(t, nonblock || done > 0)
		if avail == 0 || err != nil {
			if done > 0 {
				return done, nil
			}
			return 0, err
		}
		buf := copyBuffer(min(avail, n-done, spliceChunk))
		buf = buf[:in.Peek(buf)]
		var w int
		if at != nil {
			w, err = out.Pwrite(vfs.NewIOSeqBuffer(buf).WithContext(t), *at)
			*at += int64(w)
		} else {
			w, err = out.Write(vfs.NewIOSeqBuffer(buf).WithContext(t))
		}
		in.Discard(w)
		putCopyBuffer(buf)
		done += w
		if err != nil || w < len(buf) {
			if done > 0 {
				return done, nil
			}
			return 0, err
		}
	}
	return done, nil
}

// pipeToPipe is splice_pipe_to_pipe (or, with keep, tee's link_pipe): once
// the input has data (0 at its end) and the output room, up to n bytes of
// the input go into the output, taken from the input unless keep.
func pipeToPipe(t *kernel.Task, in, out pipe.Pipe, n int, nonblock, keep bool) (uintptr, error) {
	avail, err := in.WaitData(t, nonblock)
	if err != nil {
		return 0, err
	}
	room, err := out.WaitRoom(t, nonblock)
	if err != nil {
		return 0, err
	}
	if avail == 0 {
		return 0, nil
	}
	buf := copyBuffer(min(n, avail, room))
	defer putCopyBuffer(buf)
	put, err := out.Put(buf[:in.Peek(buf)])
	if put > 0 && !keep {
		in.Discard(put)
	}
	if put == 0 {
		return 0, err
	}
	return uintptr(put), nil
}

// Tee implements Linux syscall tee(2).
func Tee(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	length, flags := min(a[2], linuxabi.MAX_RW_COUNT), a.Uint(3)
	if flags&^spliceFlags != 0 {
		return 0, unix.EINVAL
	}
	if length == 0 {
		return 0, nil
	}
	in, err := getFile(t, a.Int(0))
	if err != nil {
		return 0, err
	}
	defer in.DecRef()
	out, err := getFile(t, a.Int(1))
	if err != nil {
		return 0, err
	}
	defer out.DecRef()
	if !in.Readable() || !out.Writable() {
		return 0, unix.EBADF
	}
	ipipe, ok1 := pipe.Of(in.Impl())
	opipe, ok2 := pipe.Of(out.Impl())
	if !ok1 || !ok2 || ipipe.Same(opipe) {
		return 0, unix.EINVAL
	}
	nonblock := flags&unix.SPLICE_F_NONBLOCK != 0 || nonblocking(in) || nonblocking(out)
	return retErr(pipeToPipe(t, ipipe, opipe, int(length), nonblock, true))
}

// Vmsplice implements Linux syscall vmsplice(2): guest memory into a pipe
// open for writing, or out of one open only for reading. Only
// SPLICE_F_NONBLOCK makes it not wait: the file's O_NONBLOCK does not, as
// on Linux.
func Vmsplice(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	flags := a.Uint(3)
	if flags&^spliceFlags != 0 {
		return 0, unix.EINVAL
	}
	f, err := getFile(t, a.Int(0))
	if err != nil {
		return 0, err
	}
	defer f.DecRef()
	toPipe := f.Writable()
	if !toPipe && !f.Readable() {
		return 0, unix.EBADF
	}
	ranges, err := copyInIovecs(t, a.Ptr(1), a[2])
	if err != nil {
		return 0, err
	}
	seq := vfs.NewIOSeqRanges(t.MM(), ranges)
	if seq.Len() == 0 {
		return 0, nil
	}
	p, ok := pipe.Of(f.Impl())
	if !ok {
		return 0, unix.EBADF
	}
	nonblock := flags&unix.SPLICE_F_NONBLOCK != 0
	if toPipe {
		if _, err := p.WaitRoom(t, nonblock); err != nil {
			return 0, err
		}
		n, err := p.PutFrom(seq)
		return retErr(uintptr(n), err)
	}
	if avail, err := p.WaitData(t, nonblock); avail == 0 || err != nil {
		return 0, err
	}
	n, err := p.TakeInto(seq)
	return retErr(uintptr(n), err)
}

// CopyFileRange implements Linux syscall copy_file_range(2) between
// regular files of one file system (one st_dev, as Linux's one superblock:
// across file systems it is EXDEV, which cp and the like answer by copying
// themselves, as Linux 6.1 does for every file system without a
// copy_file_range of its own).
func CopyFileRange(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	offInAddr, offOutAddr, length, flags := a.Ptr(1), a.Ptr(3), a[4], a.Uint(5)
	in, err := getFile(t, a.Int(0))
	if err != nil {
		return 0, err
	}
	defer in.DecRef()
	out, err := getFile(t, a.Int(2))
	if err != nil {
		return 0, err
	}
	defer out.DecRef()
	var offIn, offOut int64
	if offInAddr != 0 {
		if err := copyInStruct(t, offInAddr, &offIn); err != nil {
			return 0, err
		}
	} else {
		offIn = in.Offset()
	}
	if offOutAddr != 0 {
		if err := copyInStruct(t, offOutAddr, &offOut); err != nil {
			return 0, err
		}
	} else {
		offOut = out.Offset()
	}
	if flags != 0 {
		return 0, unix.EINVAL
	}
	ist, err := in.Stat()
	if err != nil {
		return 0, err
	}
	ost, err := out.Stat()
	if err != nil {
		return 0, err
	}
	// generic_file_rw_checks, then the superblocks, then the ranges.
	if ist.Type() == unix.S_IFDIR || ost.Type() == unix.S_IFDIR {
		return 0, unix.EISDIR
	}
	if ist.Type() != unix.S_IFREG || ost.Type() != unix.S_IFREG {
		return 0, unix.EINVAL
	}
	if !in.Readable() || !out.Writable() || out.Flags()&unix.O_APPEND != 0 {
		return 0, unix.EBADF
	}
	if ist.Dev != ost.Dev {
		return 0, unix.EXDEV
	}
	if uint64(offIn)+length < uint64(offIn) || uint64(offOut)+length < uint64(offOut) {
		return 0, unix.EOVERFLOW
	}
	count := int64(0)
	if offIn < ist.Size {
		count = int64(min(length, uint64(ist.Size-offIn)))
	}
	if ist.Ino == ost.Ino && offOut+count > offIn && offOut < offIn+count {
		return 0, unix.EINVAL // overlapping ranges of one file
	}
	if offIn < 0 || offOut < 0 {
		return 0, unix.EINVAL
	}
	count = min(count, linuxabi.MAX_RW_COUNT)
	done := int64(0)
	buf := copyBuffer(int(min(count, spliceChunk)))
	defer putCopyBuffer(buf)
	for done < count {
		if done > 0 && t.Interrupted() {
			break
		}
		chunk := buf[:min(int64(len(buf)), count-done)]
		n, rerr := in.Pread(vfs.NewIOSeqBuffer(chunk).WithContext(t), offIn+done)
		if n == 0 {
			err = rerr
			break
		}
		w, werr := out.Pwrite(vfs.NewIOSeqBuffer(chunk[:n]).WithContext(t), offOut+done)
		done += int64(w)
		if werr != nil || w < n {
			err = werr
			break
		}
	}
	if done == 0 {
		return 0, err
	}
	if offInAddr != 0 {
		if err := copyOutU64(t, offInAddr, uint64(offIn+done)); err != nil {
			return 0, err
		}
	} else {
		in.Seek(offIn+done, unix.SEEK_SET)
	}
	if offOutAddr != 0 {
		if err := copyOutU64(t, offOutAddr, uint64(offOut+done)); err != nil {
			return 0, err
		}
	} else {
		out.Seek(offOut+done, unix.SEEK_SET)
	}
	return uintptr(done), nil
}
