// Package memfile is the memory file: one memfd that owns every page of
// guest memory in a sandbox. The sentry maps all of it once and copies to
// and from the guest through that mapping; platforms map ranges of it into
// guest address spaces. It never interprets what the pages hold.
package memfile

import (
	"fmt"
	"slices"
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
	next uint64 // offsets at and above next were never allocated
	// free and warm are released ranges, zeroed, sorted by offset and
	// coalesced: free ones were punched (their memory went back to the
	// host), warm ones were cleared in place, warmBytes of them.
	free      []frange
	warm      []frange
	warmBytes uint64
	// dirty are freed ranges not yet zeroed; reclaiming says a goroutine
	// is zeroing them (Free).
	dirty      []frange
	reclaiming bool
	reclaimMu  sync.Mutex // held while a batch is zeroed
	// shared are the pages with more than one reference (refs.go).
	shared []refSeg
	// Host files mapped above fileSize (hostfile.go), sorted by offset.
	hostEnabled bool
	hosts       []hostFile
	hostNext    uint64
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
	// The view spans twice the file: host files are mapped over the upper
	// half (hostfile.go), which until then lies past the file's end.
	mem, err := unix.Mmap(fd, 0, 2*fileSize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_NORESERVE)
	if err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("map memory file: %w", err)
	}
	return &File{fd: fd, mem: mem, base: unsafe.Pointer(&mem[0]), next: PageSize, hostNext: fileSize + hostGap}, nil
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
	if off, ok := takeFirstFit(&f.warm, length); ok {
		f.warmBytes -= length
		return off, nil
	}
	if off, ok := takeFirstFit(&f.free, length); ok {
		return off, nil
	}
	if f.next+length > fileSize || f.next+length < f.next {
		return 0, unix.ENOMEM
	}
	off := f.next
	f.next += length
	return off, nil
}

// takeFirstFit takes length bytes from the first range of list long enough.
func takeFirstFit(list *[]frange, length uint64) (uint64, bool) {
	for i, r := range *list {
		if r.len < length {
			continue
		}
		if r.len == length {
			*list = append((*list)[:i], (*list)[i+1:]...)
		} else {
			(*list)[i] = frange{r.off + length, r.len - length}
		}
		return r.off, true
	}
	return 0, false
}

// A freed range of at most warmMaxRange whose pages are all in host memory
// is cleared in place rather than punched, while the warm ranges total at
// most warmBudget. Pages given out again then cost no host page fault and
// allocation: a fresh page's first write costs many times what clearing it
// costs (docs/SPECIFICATION.md), and a fork+exec touches dozens. The price
// is that much host memory kept by a sandbox that no longer uses it.
const (
	warmMaxRange = 1 << 20
	warmBudget   = 16 << 20
)

// Free gives pages back. They are zeroed (warm, or punched: the hole's
// memory returns to the host) on a goroutine of its own, which an exiting or
// exec'ing process need not wait for; the range is allocated again only
// once zeroed.
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

// reclaim zeroes the freed ranges until none is left.
func (f *File) reclaim() {
	for f.reclaimBatch() {
	}
}

// reclaimBatch zeroes the ranges freed so far and makes them allocatable;
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
	// Room in the warm budget is claimed now, and given back for a range
	// that turns out not to be all in memory.
	warm := make([]bool, len(batch))
	for i, r := range batch {
		if r.len <= warmMaxRange && f.warmBytes+r.len <= warmBudget {
			warm[i] = true
			f.warmBytes += r.len
		}
	}
	f.mu.Unlock()
	var unclaim uint64
	for i, r := range batch {
		if warm[i] && !f.clearResident(r) {
			warm[i] = false
			unclaim += r.len
		}
		if !warm[i] {
			f.Zero(r.off, r.len)
		}
	}
	f.mu.Lock()
	f.warmBytes -= unclaim
	for i, r := range batch {
		if warm[i] {
			insertLocked(&f.warm, r)
		} else {
			insertLocked(&f.free, r)
		}
	}
	f.mu.Unlock()
	return len(batch) > 0
}

// clearResident zeroes r in place if every page of it is in host memory,
// and reports whether it did. A page not in memory may be swapped out, with
// contents, so only a punch makes it zero without reading it back.
func (f *File) clearResident(r frange) bool {
	in := make([]byte, r.len/PageSize)
	if f.Residency(r.off, r.len, in) != nil || slices.Contains(in, 0) {
		return false
	}
	clear(f.Slice(r.off, r.len))
	return true
}

// Residency sets in[i] to 1 if page i of [off, off+length) is in host
// memory, else to 0 (mincore(2) on the sentry's view); in holds a byte per
// page.
func (f *File) Residency(off, length uint64, in []byte) error {
	if length == 0 {
		return nil
	}
	mem := f.Slice(off, length)
	if _, _, errno := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(&mem[0])), uintptr(len(mem)),
		uintptr(unsafe.Pointer(&in[0]))); errno != 0 {
		return errno
	}
	for i := range in[:length/PageSize] {
		in[i] &= 1
	}
	return nil
}

// insertLocked adds r to list, coalesced with its neighbours.
func insertLocked(list *[]frange, r frange) {
	l := *list
	i := sort.Search(len(l), func(i int) bool { return l[i].off > r.off })
	l = append(l, frange{})
	copy(l[i+1:], l[i:])
	l[i] = r
	if i+1 < len(l) && l[i].off+l[i].len == l[i+1].off {
		l[i].len += l[i+1].len
		l = append(l[:i+1], l[i+2:]...)
	}
	if i > 0 && l[i-1].off+l[i-1].len == l[i].off {
		l[i-1].len += l[i].len
		l = append(l[:i], l[i+1:]...)
	}
	*list = l
}

// Slice returns the sentry's view of [off, off+length).
func (f *File) Slice(off, length uint64) []byte {
	return unsafe.Slice((*byte)(unsafe.Add(f.base, off)), length)
}

// Zero returns the pages of [off, off+length) to zero (and their memory to
// the host) without freeing the range.
func (f *File) Zero(off, length uint64) {
	if isHost(off) {
		return // a host file's pages are never written
	}
	unix.Fallocate(f.fd, unix.FALLOC_FL_PUNCH_HOLE|unix.FALLOC_FL_KEEP_SIZE, int64(off), int64(length))
}

// Populate makes the pages of [off, off+length) resident now (as mlock
// wants), leaving their contents as they are: it adds zero to a word of
// each page with an atomic instruction, which a guest thread writing the
// same word at the same moment cannot lose its write to.
func (f *File) Populate(off, length uint64) {
	for p := off &^ (PageSize - 1); p < off+length; p += PageSize {
		if isHost(p) {
			atomic.LoadUint32((*uint32)(unsafe.Add(f.base, p))) // read-only: reading it brings it in
			continue
		}
		atomic.AddUint32((*uint32)(unsafe.Add(f.base, p)), 0)
	}
}
