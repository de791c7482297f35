package mm

import (
	"cmp"
	"io"
	"slices"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/platform"
	"github.com/moat-sandbox/moat/sentry/memfile"
)

// ChunkSize is the unit FilePages allocate in: large enough that a file
// written in big blocks lies in few runs of the memory file (each run one
// host mapping when the file is mapped), small enough that a small file
// costs little address space. Only pages touched cost host memory.
const ChunkSize = 64 << 10

const pagesPerChunk = ChunkSize / PageSize

// FilePages hold a file's contents in the memory file, so that every
// MAP_SHARED mapping of the file is the file (the same pages), and a
// MAP_PRIVATE one shares them until it writes: read(2), write(2) and
// mappings see one another's changes, as on Linux. A tmpfs file's data
// lives here; so does a host file's while it is mapped shared.
//
// FilePages hold one reference on each chunk; a mapping takes its own on
// the pages it maps (Map) and drops it when it goes, so pages a mapping
// still holds outlive a truncation or the file.
type FilePages struct {
	mf *memfile.File
	// account, if set, is asked before pages start holding data (n > 0)
	// and told when they stop (n < 0): a tmpfs's size limit. It may
	// refuse with an error (ENOSPC).
	account func(n int64) error
	// backing, for the cache of a file kept elsewhere (a host file),
	// fills each chunk when it is made, and takes the pages back on Sync.
	backing Backing
	// spill, if set, takes chunks out of the memory file when the chunks
	// of all the FilePages sharing it pass its limit (spill.go).
	spill *Spill

	// size is the file's size as its owner last set it, so that a
	// mapping made when the file was shorter sees it grow.
	size atomic.Int64

	mu     sync.Mutex
	chunks map[int64]*chunk // by index: file offset / ChunkSize
	// out are the chunks moved to the spill, by index; an index is in
	// chunks or out or neither (a hole).
	out  map[int64]*spilled
	used int64 // pages holding data, as accounted
}

// chunk is ChunkSize bytes of the memory file; used marks its pages that
// hold data (were written or allocated), for accounting: a page the
// memory file has never had read or written reads as zeros either way.
type chunk struct {
	off  uint64
	used uint16
	// fresh: made empty and never written since, so that a write fills
	// it through the host (flushFresh), its pages not yet in memory.
	fresh bool
}

// NewFilePages returns an empty file's pages. account may be nil.
func NewFilePages(mf *memfile.File, account func(n int64) error) *FilePages {
	return &FilePages{mf: mf, account: account, chunks: make(map[int64]*chunk)}
}

// NewSpillingPages returns an empty file's pages that move out to s when
// its chunks in the memory file pass its limit.
func NewSpillingPages(mf *memfile.File, account func(n int64) error, s *Spill) *FilePages {
	p := NewFilePages(mf, account)
	p.spill, p.out = s, make(map[int64]*spilled)
	return p
}

// SetSize records the file's size, which its owner keeps.
func (p *FilePages) SetSize(n int64) { p.size.Store(n) }

// GrowSize records that the file is at least n bytes long.
func (p *FilePages) GrowSize(n int64) {
	for {
		old := p.size.Load()
		if n <= old || p.size.CompareAndSwap(old, n) {
			return
		}
	}
}

// Size is the file's size as last recorded.
func (p *FilePages) Size() int64 { return p.size.Load() }

// Backing is the file a cache of FilePages stands for.
type Backing interface {
	// ReadAt fills p from the file at off; a short read leaves zeros.
	ReadAt(p []byte, off int64) (int, error)
	// WriteBack writes p to the file at off, no further than the file's
	// end.
	WriteBack(p []byte, off int64) error
}

// NewCachePages returns a cache of b's pages, for shared mappings of a
// file kept elsewhere: chunks are read from b when first needed, and
// written back by Sync.
func NewCachePages(mf *memfile.File, b Backing) *FilePages {
	return &FilePages{mf: mf, backing: b, chunks: make(map[int64]*chunk)}
}

// Sync writes the chunks of a cache that overlap [off, off+length) back
// to its file (length < 0: all of them). Pages of FilePages that are the
// file itself have nowhere else to go.
func (p *FilePages) Sync(off, length int64) error {
	if p.backing == nil {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	var err error
	for idx, c := range p.chunks {
		start := idx * ChunkSize
		if length >= 0 && (start+ChunkSize <= off || start >= off+length) {
			continue
		}
		if e := p.backing.WriteBack(p.mf.Slice(c.off, ChunkSize), start); e != nil && err == nil {
			err = e
		}
	}
	return err
}

// UpdateAt copies b into the chunks of a cache that hold [off,
// off+len(b)), the file having been written there (write(2)): mappings
// then see the write. Chunks not made yet will be read when they are.
func (p *FilePages) UpdateAt(b []byte, off int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for len(b) > 0 {
		idx, in := off/ChunkSize, off%ChunkSize
		k := min(int64(len(b)), ChunkSize-in)
		if c := p.chunks[idx]; c != nil {
			copy(p.mf.Slice(c.off+uint64(in), uint64(k)), b[:k])
		}
		b, off = b[k:], off+k
	}
}

// Mapped reports whether a mapping still holds any of the pages.
func (p *FilePages) Mapped() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.chunks {
		if !p.mf.Exclusive(c.off, ChunkSize) {
			return true
		}
	}
	return false
}

// ReadAt copies the bytes at off into b; holes read as zeros. The caller
// bounds b by the file's size. It fails only reading a spilled chunk.
func (p *FilePages) ReadAt(b []byte, off int64) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	for len(b) > 0 {
		idx, in := off/ChunkSize, off%ChunkSize
		k := min(int64(len(b)), ChunkSize-in)
		if c := p.chunks[idx]; c != nil {
			copy(b[:k], p.mf.Slice(c.off+uint64(in), uint64(k)))
		} else if o := p.out[idx]; o != nil {
			if err := p.spill.load(o.slot, b[:k], in); err != nil {
				return err
			}
			clearUnused(b[:k], in, o.used)
		} else {
			clear(b[:k])
		}
		b, off = b[k:], off+k
	}
	return nil
}

// clearUnused zeroes the parts of b, bytes [in, in+len(b)) of a chunk,
// that lie in pages used does not mark.
func clearUnused(b []byte, in int64, used uint16) {
	for pos := in; pos < in+int64(len(b)); {
		end := min((pos/PageSize+1)*PageSize, in+int64(len(b)))
		if used&(1<<(pos/PageSize)) == 0 {
			clear(b[pos-in : end-in])
		}
		pos = end
	}
}

// WriteAt copies b into the file at off, allocating what it needs. When
// the account refuses, it writes what fits and returns the error. Once the
// chunks a spill lets stay in memory are all taken, what falls in chunks
// not in memory goes straight to their slots in the spill (writeOutLocked):
// moving each chunk through the memory file first cost a host page fault
// per page, a copy out and a punched hole, three times the write itself.
func (p *FilePages) WriteAt(b []byte, off int64) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	done := 0
	for done < len(b) {
		pos := off + int64(done)
		idx := pos / ChunkSize
		force := false
		if p.spill != nil && p.chunks[idx] == nil && p.spill.full() {
			k, err := p.writeOutLocked(b[done:], pos)
			done += k
			if err == nil {
				continue
			}
			if err != errSpillHost {
				return done, err
			}
			// The host refused the spill: this chunk is written in memory,
			// past the limit, as a chunk the spill could not take stays.
			force = true
			pos = off + int64(done)
			idx = pos / ChunkSize
		}
		last := (off + int64(len(b)) - 1) / ChunkSize
		if p.spill != nil {
			last = p.memoryRunLocked(idx, last, force)
		}
		k, err := p.writeInLocked(b[done:min(int64(len(b)), (last+1)*ChunkSize-off)], pos)
		done += k
		if err != nil {
			return done, err
		}
	}
	if p.spill != nil && done > 0 && p.spill.over() {
		// The chunk the write ended in stays: the next write likely goes on
		// there.
		p.spillOutLocked((off + int64(done) - 1) / ChunkSize)
	}
	return done, nil
}

// memoryRunLocked is the last chunk of [first, last] that a write from
// first keeps in memory: up to the first one missing there that the
// spill's limit has no room for (first itself is kept if force).
func (p *FilePages) memoryRunLocked(first, last int64, force bool) int64 {
	room := p.spill.limit - p.spill.resident.Load()
	for idx := first; idx <= last; idx++ {
		if p.chunks[idx] != nil {
			continue
		}
		if room <= 0 && !(force && idx == first) {
			return max(idx-1, first)
		}
		room--
	}
	return last
}

// writeInLocked copies b into the file's chunks in memory at off,
// allocating and bringing in the chunks it needs.
func (p *FilePages) writeInLocked(b []byte, off int64) (int, error) {
	if err := p.ensureLocked(off/ChunkSize, (off+int64(len(b))-1)/ChunkSize); err != nil {
		return 0, err
	}
	var run freshRun
	var stop error
	done := 0
	for done < len(b) {
		pos := off + int64(done)
		idx, in := pos/ChunkSize, pos%ChunkSize
		c := p.chunks[idx]
		k, err := p.markFitLocked(&c.used, in, min(int64(len(b)-done), ChunkSize-in))
		dst := c.off + uint64(in)
		if c.fresh {
			if run.end > run.start && run.at+uint64(run.end-run.start) != dst {
				p.flushFresh(&run, b)
			}
			if run.end == run.start {
				run.start, run.at = done, dst
			}
			run.end = done + int(k)
			c.fresh = false
		} else {
			p.flushFresh(&run, b)
			copy(p.mf.Slice(dst, uint64(k)), b[done:done+int(k)])
		}
		done += int(k)
		if err != nil {
			stop = err // a full file system took what fits
			break
		}
	}
	p.flushFresh(&run, b)
	return done, stop
}

// freshRun is the part of a write, into fresh chunks neighbouring in the
// memory file, that one pwrite carries: b[start:end] at at.
type freshRun struct {
	start, end int
	at         uint64
}

// flushFresh writes run into the memory file with pwrite(2): the host
// allocates the pages as it copies, where a copy through the sentry's
// mapping took a host page fault per page, three times as slow for a
// large write (1 GiB: 0.33 s against 0.5 to 1.4 s). Should the host
// refuse, the rest is copied through the mapping, as any other write.
func (p *FilePages) flushFresh(run *freshRun, b []byte) {
	src, at := b[run.start:run.end], run.at
	run.start, run.end = 0, 0
	for len(src) > 0 {
		n, err := unix.Pwrite(p.mf.FD(), src, int64(at))
		if err == unix.EINTR {
			continue
		}
		if err != nil || n <= 0 {
			break
		}
		src, at = src[n:], at+uint64(n)
	}
	copy(p.mf.Slice(at, uint64(len(src))), src)
}

// markFitLocked marks [in, in+n) of a chunk as holding data, or as much of
// it, a page at a time, as the account lets hold data; it returns how many
// bytes it marked and the account's refusal if it stopped short.
func (p *FilePages) markFitLocked(used *uint16, in, n int64) (int64, error) {
	if p.markLocked(used, in, n) == nil {
		return n, nil
	}
	for pos := in; pos < in+n; {
		k := min(in+n-pos, PageSize-pos%PageSize)
		if err := p.markLocked(used, pos, k); err != nil {
			return pos - in, err
		}
		pos += k
	}
	return n, nil
}

// spillOutLocked moves the file's chunks but keep out to the spill, while
// the spill is past its limit, skipping those a mapping holds. A host
// error leaves the chunk where it is.
func (p *FilePages) spillOutLocked(keep int64) {
	for idx, c := range p.chunks {
		if !p.spill.over() {
			return
		}
		if idx == keep || !p.mf.Exclusive(c.off, ChunkSize) {
			continue
		}
		slot, err := p.spill.store(p.mf.Slice(c.off, ChunkSize))
		if err != nil {
			return
		}
		p.mf.DecRef(c.off, ChunkSize)
		delete(p.chunks, idx)
		p.out[idx] = &spilled{slot: slot, used: c.used}
		p.spill.resident.Add(-1)
	}
}

// Allocate makes [off, off+length) hold data, as fallocate does, so that
// writing there cannot fail for want of space.
func (p *FilePages) Allocate(off, length int64) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	first, last := off/ChunkSize, (off+length-1)/ChunkSize
	if err := p.ensureLocked(first, last); err != nil {
		return err
	}
	for pos := off; pos < off+length; {
		idx, in := pos/ChunkSize, pos%ChunkSize
		k := min(off+length-pos, ChunkSize-in)
		if err := p.markLocked(&p.chunks[idx].used, in, k); err != nil {
			return err
		}
		pos += k
	}
	return nil
}

// ensureLocked allocates the missing chunks of [first, last], each run of
// missing neighbours as one range of the memory file, and brings spilled
// ones back in.
func (p *FilePages) ensureLocked(first, last int64) error {
	for idx := first; idx <= last; {
		if p.chunks[idx] != nil {
			idx++
			continue
		}
		if o := p.out[idx]; o != nil {
			if err := p.spillInLocked(idx, o); err != nil {
				return err
			}
			idx++
			continue
		}
		end := idx
		for end+1 <= last && p.chunks[end+1] == nil && p.out[end+1] == nil {
			end++
		}
		n := end - idx + 1
		off, err := p.mf.Allocate(uint64(n * ChunkSize))
		if err != nil {
			return err
		}
		if p.backing != nil {
			if _, err := p.backing.ReadAt(p.mf.Slice(off, uint64(n*ChunkSize)), idx*ChunkSize); err != nil && err != io.EOF {
				p.mf.DecRef(off, uint64(n*ChunkSize))
				return err
			}
		}
		for k := int64(0); k < n; k++ {
			p.chunks[idx+k] = &chunk{off: off + uint64(k*ChunkSize), fresh: p.backing == nil}
		}
		if p.spill != nil {
			p.spill.resident.Add(n)
		}
		idx = end + 1
	}
	return nil
}

// spillInLocked brings chunk idx, spilled as o, back into the memory file.
func (p *FilePages) spillInLocked(idx int64, o *spilled) error {
	off, err := p.mf.Allocate(ChunkSize)
	if err != nil {
		return err
	}
	b := p.mf.Slice(off, ChunkSize)
	if err := p.spill.load(o.slot, b, 0); err != nil {
		p.mf.DecRef(off, ChunkSize)
		return err
	}
	clearUnused(b, 0, o.used)
	p.spill.release(o.slot)
	delete(p.out, idx)
	p.chunks[idx] = &chunk{off: off, used: o.used}
	p.spill.resident.Add(1)
	return nil
}

// markLocked records that [in, in+n) of the chunk whose used bits are
// *used holds data.
func (p *FilePages) markLocked(used *uint16, in, n int64) error {
	var add uint16
	for pg := in / PageSize; pg <= (in+n-1)/PageSize; pg++ {
		add |= 1 << pg
	}
	add &^= *used
	if add == 0 {
		return nil
	}
	k := int64(popcount(add))
	if p.account != nil {
		if err := p.account(k); err != nil {
			return err
		}
	}
	*used |= add
	p.used += k
	return nil
}

func popcount(v uint16) int {
	n := 0
	for ; v != 0; v &= v - 1 {
		n++
	}
	return n
}

// Truncate drops the data past size: chunks wholly past it are freed
// (but for what mappings still hold), and the rest of the last page and
// chunk reads as zeros.
func (p *FilePages) Truncate(size int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	keep := (size + ChunkSize - 1) / ChunkSize
	for idx, c := range p.chunks {
		if idx >= keep {
			p.dropLocked(idx, c)
		}
	}
	for idx, o := range p.out {
		if idx >= keep {
			p.dropOutLocked(idx, o)
		}
	}
	in, idx := size%ChunkSize, size/ChunkSize
	if in == 0 {
		return
	}
	if o := p.out[idx]; o != nil && in%PageSize != 0 {
		// The page that holds the new end is cleared past it in memory.
		// Should the host fail to give the chunk back, those bytes keep
		// what the file held there.
		p.spillInLocked(idx, o)
	}
	var gone uint16
	for pg := (in + PageSize - 1) / PageSize; pg < pagesPerChunk; pg++ {
		gone |= 1 << pg
	}
	if c := p.chunks[idx]; c != nil {
		clear(p.mf.Slice(c.off+uint64(in), uint64(ChunkSize-in)))
		p.unmarkLocked(&c.used, gone)
	} else if o := p.out[idx]; o != nil {
		p.unmarkLocked(&o.used, gone)
	}
}

// dropLocked gives back chunk idx, c.
func (p *FilePages) dropLocked(idx int64, c *chunk) {
	p.unmarkLocked(&c.used, c.used)
	p.mf.DecRef(c.off, ChunkSize)
	delete(p.chunks, idx)
	if p.spill != nil {
		p.spill.resident.Add(-1)
	}
}

// dropOutLocked gives back spilled chunk idx, o.
func (p *FilePages) dropOutLocked(idx int64, o *spilled) {
	p.unmarkLocked(&o.used, o.used)
	p.spill.release(o.slot)
	delete(p.out, idx)
}

// unmarkLocked records that the pages gone of a chunk whose used bits
// are *used no longer hold data.
func (p *FilePages) unmarkLocked(used *uint16, gone uint16) {
	gone &= *used
	if gone == 0 {
		return
	}
	k := int64(popcount(gone))
	*used &^= gone
	p.used -= k
	if p.account != nil {
		p.account(-k)
	}
}

// Release gives back every chunk: the file is gone. The chunks go back in
// memory-file order, neighbours joined, so that the memory file frees a
// run at a time: a file of millions of chunks freed in the map's random
// order made its free list that long, and each insertion into it slower.
// Spilled chunks' slots go back together too, each run punched at once.
func (p *FilePages) Release() {
	p.mu.Lock()
	defer p.mu.Unlock()
	runs := make([]fileRange, 0, len(p.chunks))
	for idx, c := range p.chunks {
		p.unmarkLocked(&c.used, c.used)
		runs = append(runs, fileRange{c.off, ChunkSize})
		delete(p.chunks, idx)
	}
	if p.spill != nil {
		p.spill.resident.Add(-int64(len(runs)))
	}
	slices.SortFunc(runs, func(a, b fileRange) int { return cmp.Compare(a.off, b.off) })
	for i := 0; i < len(runs); {
		r := runs[i]
		for i++; i < len(runs) && runs[i].off == r.off+r.len; i++ {
			r.len += runs[i].len
		}
		p.mf.DecRef(r.off, r.len)
	}
	if len(p.out) > 0 {
		slots := make([]int64, 0, len(p.out))
		for idx, o := range p.out {
			p.unmarkLocked(&o.used, o.used)
			slots = append(slots, o.slot)
			delete(p.out, idx)
		}
		p.spill.releaseAll(slots)
	}
}

// Pages is how many pages hold data.
func (p *FilePages) Pages() int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.used
}

// fileRange is a run of a file's pages in the memory file.
type fileRange struct {
	off, len uint64
}

// mapRange returns where the file's bytes [off, off+length) are (off and
// length page aligned), allocating missing chunks, in runs contiguous in
// the memory file, with a reference taken on each for the mapping.
func (p *FilePages) mapRange(off, length uint64) ([]fileRange, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	end := off + length
	if err := p.ensureLocked(int64(off/ChunkSize), int64((end-1)/ChunkSize)); err != nil {
		return nil, err
	}
	var out []fileRange
	for pos := off; pos < end; {
		c := p.chunks[int64(pos/ChunkSize)]
		in := pos % ChunkSize
		k := min(end-pos, ChunkSize-in)
		mo := c.off + in
		if n := len(out); n > 0 && out[n-1].off+out[n-1].len == mo {
			out[n-1].len += k
		} else {
			out = append(out, fileRange{mo, k})
		}
		pos += k
	}
	for _, r := range out {
		p.mf.IncRef(r.off, r.len)
	}
	return out, nil
}

// residency sets out[i] to 1 where page i of the file's [off,
// off+length) (page aligned) is in memory, leaving the rest: a hole is
// in no memory, a spilled chunk is on disk. Its cost is in the smaller
// of the range's chunks and the file's.
func (p *FilePages) residency(off, length uint64, out []byte) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	end := off + length
	mark := func(idx int64, c *chunk) error {
		lo, hi := max(off, uint64(idx)*ChunkSize), min(end, uint64(idx+1)*ChunkSize)
		if lo >= hi {
			return nil
		}
		return p.mf.Residency(c.off+lo%ChunkSize, hi-lo, out[(lo-off)/PageSize:])
	}
	if length/ChunkSize > uint64(len(p.chunks)) {
		for idx, c := range p.chunks {
			if err := mark(idx, c); err != nil {
				return err
			}
		}
		return nil
	}
	for idx := int64(off / ChunkSize); uint64(idx)*ChunkSize < end; idx++ {
		if c := p.chunks[idx]; c != nil {
			if err := mark(idx, c); err != nil {
				return err
			}
		}
	}
	return nil
}

// PageRange is a range of a file's bytes, page aligned.
type PageRange struct{ Off, Len int64 }

// Holes returns the pages of [off, off+length) that hold no data, in
// order, runs merged.
func (p *FilePages) Holes(off, length int64) []PageRange {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []PageRange
	add := func(pos, n int64) {
		if k := len(out); k > 0 && out[k-1].Off+out[k-1].Len == pos {
			out[k-1].Len += n
		} else {
			out = append(out, PageRange{pos, n})
		}
	}
	end := (off + length + PageSize - 1) &^ (PageSize - 1)
	for pos := off &^ (PageSize - 1); pos < end; {
		var used uint16
		if c := p.chunks[pos/ChunkSize]; c != nil {
			used = c.used
		} else if o := p.out[pos/ChunkSize]; o != nil {
			used = o.used
		} else {
			next := min((pos/ChunkSize+1)*ChunkSize, end)
			add(pos, next-pos)
			pos = next
			continue
		}
		if used&(1<<((pos%ChunkSize)/PageSize)) == 0 {
			add(pos, PageSize)
		}
		pos += PageSize
	}
	return out
}

// Deallocate makes the pages of [off, off+length) (page aligned) holes
// again: zeros that hold no data, their chunks given back when empty.
func (p *FilePages) Deallocate(off, length int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for pos := off; pos < off+length; pos += PageSize {
		idx := pos / ChunkSize
		bit := uint16(1) << ((pos % ChunkSize) / PageSize)
		if c := p.chunks[idx]; c != nil {
			clear(p.mf.Slice(c.off+uint64(pos%ChunkSize), PageSize))
			if p.unmarkLocked(&c.used, bit); c.used == 0 {
				p.dropLocked(idx, c)
			}
		} else if o := p.out[idx]; o != nil {
			if p.unmarkLocked(&o.used, bit); o.used == 0 {
				p.dropOutLocked(idx, o)
			}
		} else {
			pos = (idx+1)*ChunkSize - PageSize // the next chunk
		}
	}
}

// MapsWritable reports whether a shared mapping of m's may write p's
// pages (Linux's VM_SHARED|VM_MAYWRITE), for F_SEAL_WRITE.
func (m *MemoryManager) MapsWritable(p *FilePages) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, v := range m.vmas.s {
		if v.pages == p && v.shared && v.maxProt&platform.ProtWrite != 0 {
			return true
		}
	}
	return false
}

// PagesFile is an open file that keeps its data in FilePages: its
// mappings are made of those pages, up to the size the FilePages record.
type PagesFile interface {
	FilePages() *FilePages
}
