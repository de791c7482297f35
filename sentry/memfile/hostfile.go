package memfile

import (
	"errors"
	"fmt"
	"sort"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Host files: read-only files of the host (an image's programs and
// libraries) whose pages appear in the memory file's offset space above
// fileSize, so that the rest of the sentry handles them as it handles its
// own pages (offsets in pmas, Slice), while the pages themselves are the
// host's page cache: N sandboxes of one image share one copy of busybox or
// libc, as N runc containers do, instead of each holding its own.
//
// Such pages are never written: they are mapped read-only everywhere (the
// sentry's view, and the stubs' mappings of the host file), a private
// mapping copies a page before it writes it, as it does any page another
// mapping shares (Exclusive is always false here), and they are never
// freed: their references are not counted.

// hostGap separates two host files' ranges, so that no range of offsets
// runs from one file into the next (or from the memory file's own pages
// into the first): the mm joins mappings whose offsets continue.
const hostGap = PageSize

// hostFile is one host file's range of offsets.
type hostFile struct {
	off, len uint64
	fd       int // the memory file's own copy of the descriptor
}

// ErrNoHostFiles says the memory file does not map host files: the
// platform cannot, or the file cannot be mapped (its file system does not
// allow it, or its mount forbids executing it). The caller copies the file
// into the memory file instead.
var ErrNoHostFiles = errors.New("memfile: host files are not mapped here")

// EnableHostFiles allows MapHostFile: the platform maps the pages of host
// files into guest address spaces (HostFileAt says from where).
func (f *File) EnableHostFiles() {
	f.mu.Lock()
	f.hostEnabled = true
	f.mu.Unlock()
}

// MapHostFile makes the first size bytes of the host file fd (a regular
// file that no one writes while the sandbox runs) readable at the returned
// offset, read-only; the memory file keeps a copy of fd for as long as it
// lives. Its pages cost the sandbox nothing of its own until a private
// mapping writes one.
func (f *File) MapHostFile(fd int, size uint64) (uint64, error) {
	length := (size + PageSize - 1) &^ (PageSize - 1)
	if length == 0 {
		return 0, fmt.Errorf("memfile: empty host file")
	}
	// A file on a noexec mount could not be mapped executable in a stub.
	var st unix.Statfs_t
	if err := unix.Fstatfs(fd, &st); err != nil || st.Flags&unix.ST_NOEXEC != 0 {
		return 0, ErrNoHostFiles
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.hostEnabled {
		return 0, ErrNoHostFiles
	}
	off := f.hostNext
	if off+length > 2*fileSize || off+length < off {
		return 0, ErrNoHostFiles
	}
	own, err := unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return 0, fmt.Errorf("memfile: copy a host file's descriptor: %w", err)
	}
	if _, err := unix.MmapPtr(own, 0, unsafe.Add(f.base, off), uintptr(length),
		unix.PROT_READ, unix.MAP_SHARED|unix.MAP_FIXED); err != nil {
		unix.Close(own)
		return 0, ErrNoHostFiles
	}
	f.hostNext = off + length + hostGap
	f.hosts = append(f.hosts, hostFile{off: off, len: length, fd: own})
	return off, nil
}

// HostFileAt says which host file holds the offset off: its descriptor in
// the sentry and the file offset; ok is false for the memory file's own
// pages. [off, off+length) must lie in one host file.
func (f *File) HostFileAt(off, length uint64) (fd int, fileOff uint64, ok bool) {
	if off < fileSize {
		return 0, 0, false
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	i := sort.Search(len(f.hosts), func(i int) bool { return f.hosts[i].off+f.hosts[i].len > off })
	if i == len(f.hosts) || f.hosts[i].off > off || off+length > f.hosts[i].off+f.hosts[i].len {
		return -1, 0, true // a host offset outside every host file: no mapping may use it
	}
	return f.hosts[i].fd, off - f.hosts[i].off, true
}

// isHost reports whether off is a host file's page.
func isHost(off uint64) bool { return off >= fileSize }
