package mm

import (
	"slices"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// A Spill is a host file that FilePages move chunks to when the chunks
// they keep in the memory file pass a limit, so that a large file in an
// overlay's upper layer lives on the host's disk rather than in memory.
// The file is unnamed (the CLI makes it with O_TMPFILE in the container's
// state directory), so nothing of it outlives the sandbox; the sentry only
// reads and writes the descriptor it was given.
//
// The file is an array of ChunkSize slots. A chunk moves out whole to a
// free slot and back in whole when it is next written or mapped; reads are
// served from the slot. A freed slot's blocks go back to the host (a
// punched hole).
type Spill struct {
	fd int
	// limit is how many chunks the FilePages sharing this Spill may keep
	// in the memory file before they move chunks out; resident is how many
	// they keep.
	limit    int64
	resident atomic.Int64

	mu   sync.Mutex
	next int64   // slots at and above next were never used
	free []int64 // released slots
}

// NewSpill returns a Spill on the host file open read-write at fd, for
// FilePages that keep at most memory bytes in the memory file.
func NewSpill(fd int, memory int64) *Spill {
	return &Spill{fd: fd, limit: max(memory/ChunkSize, 1)}
}

// Capacity is the size in bytes of the host file system the spill file
// is on, the most the spill can hold.
func (s *Spill) Capacity() int64 {
	var st unix.Statfs_t
	if unix.Fstatfs(s.fd, &st) != nil {
		return 0
	}
	return int64(st.Blocks) * st.Bsize
}

// over reports whether the chunks kept in memory are past the limit.
func (s *Spill) over() bool { return s.resident.Load() > s.limit }

// full reports whether the chunks kept in memory reach the limit, so that
// another chunk would pass it.
func (s *Spill) full() bool { return s.resident.Load() >= s.limit }

// take returns a free slot: the lowest of those released together last
// (releaseAll), so that a file written after another was removed gets
// neighbouring slots for neighbouring chunks, written in one call.
func (s *Spill) take() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	if n := len(s.free); n > 0 {
		slot := s.free[n-1]
		s.free = s.free[:n-1]
		return slot
	}
	s.next++
	return s.next - 1
}

// store writes chunk data b to a free slot and returns the slot.
func (s *Spill) store(b []byte) (int64, error) {
	slot := s.take()
	if err := s.write(b, slot*ChunkSize); err != nil {
		s.release(slot)
		return 0, err
	}
	return slot, nil
}

// write writes all of b at off of the host file.
func (s *Spill) write(b []byte, off int64) error {
	for done := 0; done < len(b); {
		n, err := unix.Pwrite(s.fd, b[done:], off+int64(done))
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return err
		}
		done += n
	}
	return nil
}

// load reads [in, in+len(b)) of slot's chunk into b.
func (s *Spill) load(slot int64, b []byte, in int64) error {
	for done := 0; done < len(b); {
		n, err := unix.Pread(s.fd, b[done:], slot*ChunkSize+in+int64(done))
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return err
		}
		if n == 0 {
			clear(b[done:]) // past the end of what was written: a hole
			return nil
		}
		done += n
	}
	return nil
}

// release gives back slot, whose blocks return to the host.
func (s *Spill) release(slot int64) {
	unix.Fallocate(s.fd, unix.FALLOC_FL_PUNCH_HOLE|unix.FALLOC_FL_KEEP_SIZE, slot*ChunkSize, ChunkSize)
	s.mu.Lock()
	s.free = append(s.free, slot)
	s.mu.Unlock()
}

// releaseAll gives back slots (a removed file's, sorted here), punching
// each run of neighbours with one call, and queues them lowest last, the
// first that take hands out again.
func (s *Spill) releaseAll(slots []int64) {
	slices.Sort(slots)
	for i := 0; i < len(slots); {
		j := i + 1
		for j < len(slots) && slots[j] == slots[j-1]+1 {
			j++
		}
		unix.Fallocate(s.fd, unix.FALLOC_FL_PUNCH_HOLE|unix.FALLOC_FL_KEEP_SIZE,
			slots[i]*ChunkSize, int64(j-i)*ChunkSize)
		i = j
	}
	s.mu.Lock()
	for i := len(slots) - 1; i >= 0; i-- {
		s.free = append(s.free, slots[i])
	}
	s.mu.Unlock()
}

// spilled is a chunk whose data is in a slot of the Spill; used is as
// chunk's. Pages not in used read as zeros whatever the slot holds, so
// making a page a hole needs no write to the slot.
type spilled struct {
	slot int64
	used uint16
}
