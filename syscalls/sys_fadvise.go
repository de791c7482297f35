package syscalls

import (
	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/sentry/arch"
	"github.com/moat-sandbox/moat/sentry/kernel"
	"github.com/moat-sandbox/moat/sentry/vfs"
)

// Fadvise64 implements Linux syscall fadvise64(2): how the caller will
// read a file, which on Linux tunes the page cache alone and never what a
// read returns. The sentry keeps no page cache that advice would tune, so
// valid advice is taken and changes nothing; the errors are Linux's
// (generic_fadvise): a pipe or FIFO is ESPIPE, a negative length or an
// unknown advice EINVAL.
func Fadvise64(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	f, err := t.FDs().Get(a.Int(0))
	if err != nil {
		return 0, err
	}
	defer f.DecRef()
	if f.Flags()&unix.O_PATH != 0 {
		return 0, unix.EBADF
	}
	st, err := f.Stat()
	if err != nil {
		return 0, err
	}
	if st.Mode&unix.S_IFMT == unix.S_IFIFO {
		return 0, unix.ESPIPE
	}
	if a.Int64(2) < 0 {
		return 0, unix.EINVAL
	}
	switch a.Int(3) {
	case unix.FADV_NORMAL, unix.FADV_RANDOM, unix.FADV_SEQUENTIAL, unix.FADV_WILLNEED, unix.FADV_DONTNEED, unix.FADV_NOREUSE:
		return 0, nil
	}
	return 0, unix.EINVAL
}

// Readahead implements Linux syscall readahead(2): fadvise's
// POSIX_FADV_WILLNEED, for regular files (and block devices) open for
// reading. Like the advice, it changes nothing here; the errors are
// Linux's: EBADF for a file not open for reading, EINVAL for any other
// file or a count past 2^63-1.
func Readahead(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	f, err := fileAt(t, a.Int(0))
	if err != nil {
		return 0, err
	}
	defer f.DecRef()
	if !f.Readable() {
		return 0, unix.EBADF
	}
	st, err := f.Stat()
	if err != nil {
		return 0, err
	}
	if st.Type() != unix.S_IFREG && st.Type() != unix.S_IFBLK || a.Int64(2) < 0 {
		return 0, unix.EINVAL
	}
	return 0, nil
}

// SyncFileRange implements Linux syscall sync_file_range(2): it checks
// its arguments as Linux does (flags, then a range that starts below 0,
// ends past 2^63-1 or wraps: EINVAL; a file that keeps no data of its
// own, a pipe or a device: ESPIPE) and, as fsync here, has nothing to
// write back.
func SyncFileRange(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	f, err := fileAt(t, a.Int(0))
	if err != nil {
		return 0, err
	}
	defer f.DecRef()
	const valid = unix.SYNC_FILE_RANGE_WAIT_BEFORE | unix.SYNC_FILE_RANGE_WRITE | unix.SYNC_FILE_RANGE_WAIT_AFTER
	off, n := a.Int64(1), a.Int64(2)
	end := off + n
	if a.Uint(3)&^valid != 0 || off < 0 || end < 0 || end < off {
		return 0, unix.EINVAL
	}
	st, err := f.Stat()
	if err != nil {
		return 0, err
	}
	switch st.Type() {
	case unix.S_IFREG, unix.S_IFBLK, unix.S_IFDIR, unix.S_IFLNK:
		return 0, nil
	}
	return 0, unix.ESPIPE
}

// Cachestat implements Linux syscall cachestat(2): how many of a range's
// pages are in the page cache. The sentry's files are in memory (tmpfs)
// or the host's, so every page of a regular file's data in the range
// counts as cached, and none as dirty, under writeback or evicted; other
// files have no pages. As Linux's can_do_cachestat, the caller must be
// able to write the file (open for writing, its owner, or allowed by its
// mode): EPERM otherwise.
func Cachestat(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	f, err := fileAt(t, a.Int(0))
	if err != nil {
		return 0, err
	}
	defer f.DecRef()
	st, err := f.Stat()
	if err != nil {
		return 0, err
	}
	if !f.Writable() {
		c := t.FSCreds()
		if st.UID != c.FSUID && !c.CapableOver(&st, unix.CAP_FOWNER) && c.Permission(&st, vfs.MayWrite) != nil {
			return 0, unix.EPERM
		}
	}
	if a.Uint(3) != 0 {
		return 0, unix.EINVAL
	}
	// struct cachestat_range: off, len (0: to the end of the file).
	var rng struct{ Off, Len uint64 }
	if err := copyInStruct(t, a.Ptr(1), &rng); err != nil {
		return 0, err
	}
	// struct cachestat: nr_cache, nr_dirty, nr_writeback, nr_evicted,
	// nr_recently_evicted.
	var out [5]uint64
	if st.Type() == unix.S_IFREG {
		out[0] = cachedPages(rng.Off, rng.Len, uint64(st.Size))
	}
	return 0, copyOutStruct(t, a.Ptr(2), &out)
}

// cachedPages counts the pages of a file of size bytes that the range
// [off, off+n) touches (n 0: to the end), as Linux's filemap_cachestat
// walks from off's page to the last byte's.
func cachedPages(off, n, size uint64) uint64 {
	const page = 4096
	if size == 0 {
		return 0
	}
	first, last := off/page, (size-1)/page
	if n != 0 {
		last = min(last, (off+n-1)/page)
	}
	if first > last {
		return 0
	}
	return last - first + 1
}
