package procfs

import (
	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/sentry/kernel"
	"github.com/moat-sandbox/moat/sentry/mm"
	"github.com/moat-sandbox/moat/sentry/vfs"
)

// /proc/<pid>/mem: the process's memory at the file offset that is its
// address, read and written as a debugger does (whatever the mappings'
// protection, a private mapping written into the process's own copy), by
// its owner (mode 0600) if MayPtrace lets the opener attach to it, as
// Linux's mm_access; a process may always open its own. It reaches the
// memory the process had at the open: once that is gone (an exec, the
// exit), reads give 0.

// taskAndOpener are the task get returns and the task opening one of its
// files; a kernel-side open (no task) is refused, as it cannot be
// checked.
func taskAndOpener(c vfs.Context, get func() (*kernel.Task, error)) (t, opener *kernel.Task, err error) {
	if t, err = get(); err != nil {
		return nil, nil, err
	}
	opener, ok := c.(*kernel.Task)
	if !ok {
		return nil, nil, unix.EACCES
	}
	return t, opener, nil
}

// memNode is the mem file of the task get returns.
func (f *fs) memNode(path string, get func() (*kernel.Task, error)) *node {
	n := f.file(path, nil)
	n.mode = unix.S_IFREG | 0o600
	n.openAs = func(c vfs.Context, flags int) (vfs.FileImpl, error) {
		t, opener, err := taskAndOpener(c, get)
		if err != nil {
			return nil, err
		}
		m := t.MM()
		if opener.MM() != m && !opener.MayPtrace(t, kernel.PtraceAttachFSCreds) {
			return nil, unix.EACCES
		}
		return &memFile{node: n, mm: m}, nil
	}
	return f.owned(n, get)
}

// memFile is an open /proc/<pid>/mem.
type memFile struct {
	node *node
	mm   *mm.MemoryManager
}

// memChunk is how much one step of a read or write moves, as Linux's
// mem_rw goes a page at a time: an access that stops short ends the call.
const memChunk = 4096

// Read implements vfs.FileImpl: EIO if nothing at off can be read.
// NoSpliceRead implements vfs.Unspliceable: Linux's mem has no
// splice_read.
func (m *memFile) NoSpliceRead() bool { return true }

func (m *memFile) Read(dst *vfs.IOSeq, off int64) (int, error) {
	return m.rw(dst, off, false)
}

// Write implements vfs.FileImpl: EIO if nothing at off can be written.
func (m *memFile) Write(src *vfs.IOSeq, off int64) (int, error) {
	return m.rw(src, off, true)
}

func (m *memFile) rw(s *vfs.IOSeq, off int64, write bool) (int, error) {
	if m.mm.Users() == 0 {
		return 0, nil
	}
	buf := make([]byte, memChunk)
	done := 0
	for left := s.Len(); left > 0; {
		b := buf[:min(left, memChunk)]
		addr := uintptr(off) + uintptr(done)
		var n int
		if write {
			got, err := s.Skip(done).CopyIn(b)
			if err != nil {
				return done, err
			}
			n, _ = m.mm.ForceCopyOut(addr, b[:got])
		} else {
			n, _ = m.mm.ForceCopyIn(addr, b)
			if n > 0 {
				if _, err := s.Skip(done).CopyOut(b[:n]); err != nil {
					return done, err
				}
			}
		}
		if n == 0 {
			if done == 0 {
				return 0, unix.EIO
			}
			break
		}
		done += n
		left -= n
		if n < len(b) {
			break
		}
	}
	return done, nil
}

func (m *memFile) Stat() (vfs.Stat, error) { return m.node.Stat() }
func (m *memFile) Ioctl(uint32, uintptr, vfs.IoctlIO) (uintptr, error) {
	return 0, unix.ENOTTY
}
func (m *memFile) Release()             {}
func (m *memFile) Size() (int64, error) { return 0, nil }
