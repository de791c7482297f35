// Package memfile is the memory file: one memfd that owns every page of
// guest memory in a sandbox. The sentry maps all of it once and copies to
// and from the guest through that mapping; platforms map ranges of it into
// guest address spaces. It never interprets what the pages hold.
package memfile

import (
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// PageSize is the guest page size.
const PageSize = 4096

// fileSize is the memory file's sparse size: only pages in use cost memory,
// so it is sized for the largest sandbox, not the current one.
const fileSize = 1 << 38

// File is the memory file.
type File struct {
	fd   int
	mem  []byte
	base unsafe.Pointer

	mu   sync.Mutex
	next uint64   // offsets at and above next were never allocated
	free []frange // released ranges, zeroed, sorted by offset, coalesced
	// dirty are freed ranges not yet punched; reclaiming says a goroutine
	// is punching them (Free).
	dirty      []frange
	reclaiming bool
	reclaimMu  sync.Mutex // held while a batch is punched
	// shared are the pages with more than one reference (refs.go).
	shared []refSeg
}

type frange struct{ off, len uint64 }

// New creates the memory file.
func New() (*File, error) {
	fd, err := unix.MemfdCreate("moat-memory", unix.MFD_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("create memory file: %w", err)
	}
	if err := unix.Ftruncate(fd, fileSize); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("size memory file: %w", err)
	}
	mem, err := unix.Mmap(fd, 0, fileSize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_NORESERVE)
	if err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("map memory file: %w", err)
	}
	return &File{fd: fd, mem: mem, base: unsafe.Pointer(&mem[0]), next: PageSize}, nil
}

// FD is the memory file's descriptor, for platforms to map from.
func (f *File) FD() int { return f.fd }

// Allocate returns the offset of length bytes (a multiple of PageSize) of
// zeroed pages. Pages cost host memory only once touched.
func (f *File) Allocate(length uint64) (uint64, error) {
	if length == 0 || length%PageSize != 0 {
		return 0, fmt.Errorf("memfile: bad allocation length %#x", length)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for i, r := range f.free {
		if r.len < length {
			continue
		}
		off := r.off
		if r.len == length {
			f.free = append(f.free[:i], f.free[i+1:]...)
		} else {
			f.free[i] = frange{r.off + length, r.len - length}
		}
		return off, nil
	}
	if f.next+length > fileSize || f.next+length < f.next {
		return 0, unix.ENOMEM
	}
	off := f.next
	f.next += length
	return off, nil
}

// Free gives pages back. Their memory returns to the host (a hole punched
// in the memfd) on a goroutine of its own: punching is slow, since the host
// must take the pages out of every stub that maps them, and an exiting or
// exec'ing process need not wait for it. The range is allocated again only
// once punched, so it comes back zeroed.
func (f *File) Free(off, length uint64) {
	if length == 0 {
		return
	}
	f.mu.Lock()
	f.dirty = append(f.dirty, frange{off, length})
	start := !f.reclaiming
	f.reclaiming = true
	f.mu.Unlock()
	if start {
		go f.reclaim()
	}
}

// reclaim punches the freed ranges until none is left.
func (f *File) reclaim() {
	for f.reclaimBatch() {
	}
}

// reclaimBatch punches the ranges freed so far and makes them allocatable;
// it reports whether there were any (if not, reclaiming stops).
func (f *File) reclaimBatch() bool {
	f.reclaimMu.Lock()
	defer f.reclaimMu.Unlock()
	f.mu.Lock()
	batch := f.dirty
	f.dirty = nil
	if len(batch) == 0 {
		f.reclaiming = false
	}
	f.mu.Unlock()
	for _, r := range batch {
		f.Zero(r.off, r.len)
	}
	f.mu.Lock()
	for _, r := range batch {
		f.insertFreeLocked(r)
	}
	f.mu.Unlock()
	return len(batch) > 0
}

// insertFreeLocked adds r to the free list, coalesced with its neighbours.
func (f *File) insertFreeLocked(r frange) {
	i := sort.Search(len(f.free), func(i int) bool { return f.free[i].off > r.off })
	f.free = append(f.free, frange{})
	copy(f.free[i+1:], f.free[i:])
	f.free[i] = r
	if i+1 < len(f.free) && f.free[i].off+f.free[i].len == f.free[i+1].off {
		f.free[i].len += f.free[i+1].len
		f.free = append(f.free[:i+1], f.free[i+2:]...)
	}
	if i > 0 && f.free[i-1].off+f.free[i-1].len == f.free[i].off {
		f.free[i-1].len += f.free[i].len
		f.free = append(f.free[:i], f.free[i+1:]...)
	}
}

// Slice returns the sentry's view of [off, off+length).
func (f *File) Slice(off, length uint64) []byte {
	return unsafe.Slice((*byte)(unsafe.Add(f.base, off)), length)
}

// Zero returns the pages of [off, off+length) to zero (and their memory to
// the host) without freeing the range.
func (f *File) Zero(off, length uint64) {
	unix.Fallocate(f.fd, unix.FALLOC_FL_PUNCH_HOLE|unix.FALLOC_FL_KEEP_SIZE, int64(off), int64(length))
}

// Populate makes the pages of [off, off+length) resident now (as mlock
// wants), leaving their contents as they are: it adds zero to a word of
// each page with an atomic instruction, which a guest thread writing the
// same word at the same moment cannot lose its write to.
func (f *File) Populate(off, length uint64) {
	for p := off &^ (PageSize - 1); p < off+length; p += PageSize {
		atomic.AddUint32((*uint32)(unsafe.Add(f.base, p)), 0)
	}
}
