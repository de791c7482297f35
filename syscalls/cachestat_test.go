package syscalls

import "testing"

// The pages cachestat(2) counts for a range of a file of some size.
func TestCachedPages(t *testing.T) {
	for _, c := range []struct{ off, n, size, want uint64 }{
		{0, 0, 0, 0},
		{0, 0, 1, 1},
		{0, 0, 8192, 2},
		{0, 0, 8193, 3},
		{4096, 1, 8192, 1},
		{4095, 2, 8192, 2},
		{8192, 0, 8192, 0},
		{1 << 20, 0, 8192, 0},
		{^uint64(0), 2, 8192, 0}, // wraps: from the last page to page 0
		{0, 4096, 1 << 30, 1},
	} {
		if got := cachedPages(c.off, c.n, c.size); got != c.want {
			t.Errorf("cachedPages(%d, %d, %d) = %d, want %d", c.off, c.n, c.size, got, c.want)
		}
	}
}
