package mm

import (
	"bytes"
	"testing"

	"github.com/moat-sandbox/moat/sentry/memfile"
)

func TestFreshChunksWrittenThroughTheHost(t *testing.T) {
	mf, err := memfile.New()
	if err != nil {
		t.Fatal(err)
	}
	p := NewFilePages(mf, nil)
	const size = 3*ChunkSize + 5000
	data := pattern(size, 21)
	if n, err := p.WriteAt(data[:size-100], 0); err != nil || n != size-100 {
		t.Fatalf("write: %d, %v", n, err)
	}
	// A second write into a chunk already written goes through the
	// mapping; both show through it, as a shared mapping of the file sees
	// them.
	if _, err := p.WriteAt(data[size-100:], size-100); err != nil {
		t.Fatal(err)
	}
	for idx := int64(0); idx <= 3; idx++ {
		c := p.chunks[idx]
		if c.fresh {
			t.Fatalf("chunk %d still fresh after a write", idx)
		}
		want := data[idx*ChunkSize : min(size, (idx+1)*ChunkSize)]
		if !bytes.Equal(mf.Slice(c.off, uint64(len(want))), want) {
			t.Fatalf("chunk %d as the sentry's mapping shows it differs from what was written", idx)
		}
	}
	if !bytes.Equal(readAll(t, p, size), data) {
		t.Fatal("data read back differs")
	}
	// A page never written reads zeros, from the host's fresh pages.
	p.WriteAt([]byte{1}, 9*ChunkSize+PageSize)
	page := make([]byte, 2*PageSize)
	if err := p.ReadAt(page, 9*ChunkSize); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(page[:PageSize], make([]byte, PageSize)) || page[PageSize] != 1 || !bytes.Equal(page[PageSize+1:], make([]byte, PageSize-1)) {
		t.Fatal("a fresh chunk written one byte reads something but zeros around it")
	}
	p.Release()
}
