package mm

import (
	"bytes"
	"os"
	"testing"

	"github.com/moat-sandbox/moat/sentry/memfile"
)

// newSpilling returns FilePages that keep at most chunks chunks in the
// memory file, spilling to a file in a test directory.
func newSpilling(t *testing.T, chunks int64) (*FilePages, *Spill) {
	t.Helper()
	if sharedFile == nil {
		f, err := memfile.New()
		if err != nil {
			t.Fatal(err)
		}
		sharedFile = f
	}
	f, err := os.CreateTemp(t.TempDir(), "spill")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	s := NewSpill(int(f.Fd()), chunks*ChunkSize)
	return NewSpillingPages(sharedFile, nil, s), s
}

// pattern is n bytes that differ from page to page and chunk to chunk.
func pattern(n int, seed byte) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i/PageSize) ^ byte(i/ChunkSize)*7 ^ seed ^ byte(i)
	}
	return b
}

func readAll(t *testing.T, p *FilePages, n int) []byte {
	t.Helper()
	b := make([]byte, n)
	if err := p.ReadAt(b, 0); err != nil {
		t.Fatal(err)
	}
	return b
}

func TestSpillKeepsDataAndMemoryBound(t *testing.T) {
	p, s := newSpilling(t, 2)
	const size = 16 * ChunkSize
	want := pattern(size, 1)
	for off := 0; off < size; off += 48 << 10 { // writes that straddle chunks
		end := min(off+48<<10, size)
		if n, err := p.WriteAt(want[off:end], int64(off)); err != nil || n != end-off {
			t.Fatalf("write at %d: %d, %v", off, n, err)
		}
		if r := s.resident.Load(); r > 2+1 {
			t.Fatalf("after the write at %d, %d chunks in memory, want at most 3", off, r)
		}
	}
	if len(p.out) < 13 {
		t.Fatalf("%d chunks spilled of 16, limit 2", len(p.out))
	}
	if !bytes.Equal(readAll(t, p, size), want) {
		t.Fatal("data read back differs from what was written")
	}
	if p.Pages() != size/PageSize {
		t.Fatalf("%d pages hold data, want %d", p.Pages(), size/PageSize)
	}

	// Writing into a spilled chunk, memory being full, writes its slot in
	// place; the data stays exact.
	patch := pattern(5000, 9)
	if _, err := p.WriteAt(patch, 3*ChunkSize+100); err != nil {
		t.Fatal(err)
	}
	copy(want[3*ChunkSize+100:], patch)
	if p.out[3] == nil || s.resident.Load() > 2 {
		t.Fatalf("a write into spilled chunk 3 brought it in (%d chunks in memory)", s.resident.Load())
	}
	if !bytes.Equal(readAll(t, p, size), want) {
		t.Fatal("data differs after a write into a spilled chunk")
	}

	p.Release()
	if r := s.resident.Load(); r != 0 || len(p.out) != 0 {
		t.Fatalf("after Release: %d chunks in memory, %d spilled", r, len(p.out))
	}
	if s.next != int64(len(s.free)) {
		t.Fatalf("%d slots used, %d free: a slot was lost", s.next, len(s.free))
	}
}

func TestSpilledTruncateAndHoles(t *testing.T) {
	p, _ := newSpilling(t, 1)
	const size = 6 * ChunkSize
	data := pattern(size, 3)
	p.WriteAt(data, 0)
	if p.out[1] == nil || p.out[2] == nil {
		t.Fatal("chunks 1 and 2 were not spilled")
	}

	// A page made a hole in a spilled chunk reads as zeros and is one.
	p.Deallocate(ChunkSize+2*PageSize, PageSize)
	got := readAll(t, p, size)
	if !bytes.Equal(got[ChunkSize+2*PageSize:ChunkSize+3*PageSize], make([]byte, PageSize)) {
		t.Fatal("a deallocated page of a spilled chunk does not read as zeros")
	}
	if h := p.Holes(ChunkSize, ChunkSize); len(h) != 1 || h[0] != (PageRange{ChunkSize + 2*PageSize, PageSize}) {
		t.Fatalf("holes of spilled chunk 1: %v", h)
	}

	// Truncating into the middle of a page of a spilled chunk: what lay
	// past the new end reads as zeros when the file grows again.
	end := int64(2*ChunkSize + 3*PageSize + 10)
	p.Truncate(end)
	got = readAll(t, p, size)
	if !bytes.Equal(got[:end], append(append([]byte{}, data[:ChunkSize+2*PageSize]...), append(make([]byte, PageSize), data[ChunkSize+3*PageSize:end]...)...)) {
		t.Fatal("data before the new end changed")
	}
	if !bytes.Equal(got[end:], make([]byte, size-end)) {
		t.Fatal("data past the new end does not read as zeros")
	}
	if want := int64(2*pagesPerChunk + 4 - 1); p.Pages() != want {
		t.Fatalf("%d pages hold data, want %d", p.Pages(), want)
	}
}

func TestSpillSharedAndMapped(t *testing.T) {
	a, s := newSpilling(t, 2)
	b := NewSpillingPages(sharedFile, nil, s)
	da, db := pattern(8*ChunkSize, 5), pattern(8*ChunkSize, 6)
	for off := 0; off < len(da); off += ChunkSize {
		a.WriteAt(da[off:off+ChunkSize], int64(off))
		b.WriteAt(db[off:off+ChunkSize], int64(off))
	}
	if !bytes.Equal(readAll(t, a, len(da)), da) || !bytes.Equal(readAll(t, b, len(db)), db) {
		t.Fatal("two files sharing a spill mixed their data")
	}

	// A mapped chunk comes back into memory and stays there while mapped.
	rs, err := a.mapRange(0, ChunkSize)
	if err != nil {
		t.Fatal(err)
	}
	if a.chunks[0] == nil {
		t.Fatal("a mapped chunk is not in memory")
	}
	if !bytes.Equal(sharedFile.Slice(rs[0].off, ChunkSize), da[:ChunkSize]) {
		t.Fatal("the mapping does not see the file's data")
	}
	a.WriteAt(da[ChunkSize:3*ChunkSize], ChunkSize)
	if a.chunks[0] == nil {
		t.Fatal("a chunk a mapping holds was spilled")
	}
	sharedFile.DecRef(rs[0].off, rs[0].len)
	a.Release()
	b.Release()
	if r := s.resident.Load(); r != 0 {
		t.Fatalf("%d chunks in memory after both files went", r)
	}
}
