package mm

import (
	"bytes"
	"os"
	"testing"

	"golang.org/x/sys/unix"
)

func TestSpillWritesPastTheLimitGoToSlots(t *testing.T) {
	p, s := newSpilling(t, 1)
	const size = 17 * ChunkSize
	want := pattern(size, 11)
	if n, err := p.WriteAt(want, 0); err != nil || n != size {
		t.Fatalf("write: %d, %v", n, err)
	}
	if r := s.resident.Load(); r != 1 || p.chunks[0] == nil {
		t.Fatalf("%d chunks in memory, want chunk 0 alone", r)
	}
	// The chunks past the limit took neighbouring slots, in order: one
	// host write can carry a run of them.
	for idx := int64(2); idx < 17; idx++ {
		if p.out[idx].slot != p.out[idx-1].slot+1 {
			t.Fatalf("chunk %d in slot %d, chunk %d in slot %d", idx-1, p.out[idx-1].slot, idx, p.out[idx].slot)
		}
	}
	if !bytes.Equal(readAll(t, p, size), want) {
		t.Fatal("data read back differs from what was written")
	}
	if p.Pages() != size/PageSize {
		t.Fatalf("%d pages hold data, want %d", p.Pages(), size/PageSize)
	}

	// A file written after this one went gets the slots back in order.
	p.Release()
	q := NewSpillingPages(sharedFile, nil, s)
	if _, err := q.WriteAt(want, 0); err != nil {
		t.Fatal(err)
	}
	for idx := int64(2); idx < 17; idx++ {
		if q.out[idx].slot != q.out[idx-1].slot+1 {
			t.Fatalf("after a release, chunk %d in slot %d, chunk %d in slot %d", idx-1, q.out[idx-1].slot, idx, q.out[idx].slot)
		}
	}
	if !bytes.Equal(readAll(t, q, size), want) {
		t.Fatal("data read back from reused slots differs")
	}
	q.Release()
	if s.next != int64(len(s.free)) {
		t.Fatalf("%d slots used, %d free: a slot was lost", s.next, len(s.free))
	}
}

func TestSpillPartialPageReadsZerosAround(t *testing.T) {
	p, _ := newSpilling(t, 1)
	p.WriteAt(pattern(ChunkSize, 1), 0) // memory's one chunk
	old := pattern(ChunkSize, 2)
	p.WriteAt(old, ChunkSize)
	if p.out[1] == nil {
		t.Fatal("chunk 1 was not spilled")
	}
	// The page made a hole keeps its old bytes in the slot; a small write
	// into it must not bring them back.
	pg := int64(ChunkSize + 3*PageSize)
	p.Deallocate(pg, PageSize)
	if _, err := p.WriteAt([]byte("hello"), pg+100); err != nil {
		t.Fatal(err)
	}
	want := make([]byte, PageSize)
	copy(want[100:], "hello")
	got := readAll(t, p, 2*ChunkSize)
	if !bytes.Equal(got[pg:pg+PageSize], want) {
		t.Fatal("a partly written page of a spilled chunk shows what it held before it was a hole")
	}
	if !bytes.Equal(got[ChunkSize:pg], old[:3*PageSize]) || !bytes.Equal(got[pg+PageSize:], old[4*PageSize:]) {
		t.Fatal("the rest of the spilled chunk changed")
	}
	// A fresh slot (a hole past the end) written mid-page reads zeros
	// around the write too.
	if _, err := p.WriteAt([]byte("x"), 5*ChunkSize+7); err != nil {
		t.Fatal(err)
	}
	page := make([]byte, PageSize)
	if err := p.ReadAt(page, 5*ChunkSize); err != nil {
		t.Fatal(err)
	}
	if page[7] != 'x' || !bytes.Equal(page[:7], make([]byte, 7)) || !bytes.Equal(page[8:], make([]byte, PageSize-8)) {
		t.Fatal("a write into a fresh slot left something but zeros around it")
	}
}

func TestSpillWriteFullFileSystemTakesWhatFits(t *testing.T) {
	_, s := newSpilling(t, 1)
	var held, max int64 = 0, pagesPerChunk + 5
	account := func(n int64) error {
		if held+n > max {
			return unix.ENOSPC
		}
		held += n
		return nil
	}
	p := NewSpillingPages(sharedFile, account, s)
	data := pattern(3*ChunkSize, 4)
	n, err := p.WriteAt(data, 0)
	if err != unix.ENOSPC || n != int(max*PageSize) {
		t.Fatalf("write to a file system of %d pages: %d, %v; want %d, ENOSPC", max, n, err, max*PageSize)
	}
	if held != max || p.Pages() != max {
		t.Fatalf("%d pages accounted, %d hold data; want %d", held, p.Pages(), max)
	}
	if !bytes.Equal(readAll(t, p, n), data[:n]) {
		t.Fatal("what fit reads back different")
	}
	p.Release()
	if held != 0 {
		t.Fatalf("%d pages still accounted after Release", held)
	}
}

func TestSpillHostRefusalKeepsWriteInMemory(t *testing.T) {
	p, s := newSpilling(t, 1)
	// A spill whose descriptor cannot be written: the host refuses.
	f, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	s.fd = int(f.Fd())
	data := pattern(4*ChunkSize, 8)
	if n, err := p.WriteAt(data, 0); err != nil || n != len(data) {
		t.Fatalf("write: %d, %v; a spill the host refuses must not fail it", n, err)
	}
	if len(p.out) != 0 || len(p.chunks) != 4 {
		t.Fatalf("%d chunks spilled, %d in memory; want 0 and 4", len(p.out), len(p.chunks))
	}
	if !bytes.Equal(readAll(t, p, len(data)), data) {
		t.Fatal("data read back differs")
	}
	if p.Pages() != int64(len(data)/PageSize) {
		t.Fatalf("%d pages hold data, want %d", p.Pages(), len(data)/PageSize)
	}
	p.Release()
}
