package pipe_test

import (
	"bytes"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/platform/fake"
)

// splice moves up to n bytes from fd in to fd out, neither at an offset.
func splice(g *fake.Guest, in, out uintptr, n int) (uintptr, unix.Errno) {
	return g.Call(unix.SYS_SPLICE, in, 0, out, 0, uintptr(n), unix.SPLICE_F_NONBLOCK)
}

func TestSpliceBetweenPipesMovesDataAcrossTheRingsEnd(t *testing.T) {
	run(t, func(g *fake.Guest) {
		r1, w1 := newPipe(t, g, 0)
		r2, w2 := newPipe(t, g, 0)
		// Start the data 4 KiB before the end of the 64 KiB ring.
		write(g, w1, make([]byte, 60<<10))
		read(g, r1, 60<<10)
		want := make([]byte, 10<<10)
		for i := range want {
			want[i] = byte(i * 7)
		}
		write(g, w1, want)
		if n, errno := splice(g, r1, w2, 1<<20); errno != 0 || n != uintptr(len(want)) {
			t.Fatalf("splice = %d, %v; want %d bytes", n, errno, len(want))
		}
		if got := inPipe(t, g, r1); got != 0 {
			t.Errorf("source holds %d bytes after the splice, want 0", got)
		}
		if got, _ := read(g, r2, 1<<20); !bytes.Equal(got, want) {
			t.Errorf("spliced data differs (%d bytes)", len(got))
		}
	})
}

func TestSpliceFromAPacketPipeLeavesTheRestOfAPacket(t *testing.T) {
	run(t, func(g *fake.Guest) {
		r1, w1 := newPipe(t, g, unix.O_DIRECT|unix.O_NONBLOCK)
		r2, w2 := newPipe(t, g, unix.O_NONBLOCK)
		write(g, w1, []byte("abc"))
		write(g, w1, []byte("defg"))
		if n, errno := splice(g, r1, w2, 5); errno != 0 || n != 5 {
			t.Fatalf("splice = %d, %v; want 5", n, errno)
		}
		// Linux would keep the packet boundaries in r2 ("abc", then
		// "de"); moat's r2 is a plain pipe: only the bytes are checked.
		var got []byte
		for len(got) < 5 {
			b, errno := read(g, r2, 100)
			if errno != 0 || len(b) == 0 {
				break
			}
			got = append(got, b...)
		}
		if string(got) != "abcde" {
			t.Errorf("spliced %q, want abcde", got)
		}
		if b, _ := read(g, r1, 100); string(b) != "fg" {
			t.Errorf("read after the splice = %q, want the packet's rest fg", b)
		}
		if b, errno := read(g, r1, 100); errno != unix.EAGAIN {
			t.Errorf("second read = %q, %v; want EAGAIN", b, errno)
		}
	})
}
