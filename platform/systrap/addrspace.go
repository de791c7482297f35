package systrap

import (
	"sync"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/platform"
)

// addressSpace is a guest address space: one stub process. Changes queue up
// and go to the stub's syscall thread in one request, before the next guest
// code of this address space runs.
type addressSpace struct {
	p    *Platform
	stub *stubProcess

	// spare is a parked thread ready for NewContext: the first is made
	// with the stub, later ones in the background once the guest has made
	// a second thread (a thread pool or a language runtime makes more).
	// contexts counts NewContext calls; refilling says a spare is being
	// made, and spareMade is signalled when it is.
	spareMu   sync.Mutex
	spareMade sync.Cond
	spare     *threadContext
	contexts  int
	refilling bool

	mu      sync.Mutex
	pending []op
	err     error // the first failure of a flushed change

	// Host files' descriptors (hostfds.go), under mu: what the stub holds,
	// and the descriptors numbered there but not sent yet, which the next
	// flush sends.
	fds    stubFDs
	unsent []int
}

var _ platform.AddressSpace = (*addressSpace)(nil)

// queue adds a change of [o.args[0], o.args[0]+o.args[1]). The range is
// checked here too, though the kernel checks it first: a stub must never be
// asked to touch its own region.
func (as *addressSpace) queue(o op) error {
	if end := o.args[0] + o.args[1]; end < o.args[0] || end > MaxGuestAddr {
		return unix.EINVAL
	}
	as.mu.Lock()
	defer as.mu.Unlock()
	return as.queueLocked(o)
}

func (as *addressSpace) queueLocked(o op) error {
	if len(as.pending) == 0 {
		as.stub.prewake()
	}
	as.pending = append(as.pending, o)
	// A flush that sends descriptors makes one request more.
	extra := 0
	if len(as.unsent) > 0 {
		extra = 1
	}
	if len(as.pending)+extra >= maxOps || len(as.unsent) == maxFDsPerMessage {
		return as.flushLocked(urgent)
	}
	return nil
}

// flush applies queued changes.
func (as *addressSpace) flush(u urgency) error {
	as.mu.Lock()
	defer as.mu.Unlock()
	return as.flushLocked(u)
}

func (as *addressSpace) flushLocked(u urgency) error {
	if len(as.pending) == 0 {
		return as.err
	}
	var err error
	if len(as.unsent) > 0 {
		sent := as.unsent
		want := make([]int, len(sent))
		for i, fd := range sent {
			want[i] = as.fds.num[fd]
		}
		err = as.p.fds.sendAndCall(as.stub, u, sent, want, as.pending)
		as.unsent = nil
		if err == nil {
			go as.p.shareWithSource(sent)
		}
	} else {
		_, err = as.stub.call(u, as.pending...)
	}
	as.pending = as.pending[:0]
	if err != nil && as.err == nil {
		as.err = err
	}
	return as.err
}

// Sync implements platform.AddressSpace.
func (as *addressSpace) Sync() error { return as.flush(urgent) }

// MapFile implements platform.AddressSpace: the memory file's pages, or a
// host file's (hostfds.go), which are never writable.
func (as *addressSpace) MapFile(addr uintptr, off uint64, length uintptr, prot platform.Prot) error {
	if end := uint64(addr) + uint64(length); end < uint64(addr) || end > MaxGuestAddr {
		return unix.EINVAL
	}
	as.mu.Lock()
	defer as.mu.Unlock()
	fd := as.p.memFD
	if as.p.hostFiles != nil {
		if hfd, fileOff, ok := as.p.hostFiles.HostFileAt(off, uint64(length)); ok {
			if hfd < 0 || prot&platform.ProtWrite != 0 {
				return unix.EINVAL
			}
			n, err := as.stubFDLocked(hfd)
			if err != nil {
				return err
			}
			fd, off = n, fileOff
		}
	}
	return as.queueLocked(op{nr: unix.SYS_MMAP, args: [6]uint64{
		uint64(addr), uint64(length), uint64(prot), unix.MAP_SHARED | unix.MAP_FIXED, uint64(fd), off}})
}

// Unmap implements platform.AddressSpace.
func (as *addressSpace) Unmap(addr, length uintptr) error {
	return as.queue(op{nr: unix.SYS_MUNMAP, args: [6]uint64{uint64(addr), uint64(length)}})
}

// Protect implements platform.AddressSpace.
func (as *addressSpace) Protect(addr, length uintptr, prot platform.Prot) error {
	return as.queue(op{nr: unix.SYS_MPROTECT, args: [6]uint64{uint64(addr), uint64(length), uint64(prot)}})
}

// Kill implements platform.AddressSpace: the stub process dies; the reaper
// then wakes whoever waits on its threads.
func (as *addressSpace) Kill() {
	if !as.stub.dead.Load() {
		unix.Kill(as.stub.pid, unix.SIGKILL)
	}
}

// Release implements platform.AddressSpace.
func (as *addressSpace) Release() {
	as.stub.destroy()
}
