package syscalls

import (
	"encoding/binary"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/sentry/vfs"
)

// The two record layouts of getdents(2) and getdents64(2).
func TestPackDirent(t *testing.T) {
	for _, name := range []string{"a", "abcde", "abcdef", strings.Repeat("n", 255)} {
		d := vfs.Dirent{Name: name, Ino: 0x1122334455, Type: unix.DT_REG}
		old := packDirent(d, 7)
		// Name, NUL and the type byte after the 18-byte header, to 8.
		if want := (18 + len(name) + 2 + 7) &^ 7; len(old) != want {
			t.Errorf("linux_dirent of %d-byte name: %d bytes, want %d", len(name), len(old), want)
		}
		le := binary.LittleEndian
		if le.Uint64(old) != d.Ino || le.Uint64(old[8:]) != 7 || int(le.Uint16(old[16:])) != len(old) {
			t.Errorf("linux_dirent header of %q: % x", name, old[:18])
		}
		if got := string(old[18 : 18+len(name)]); got != name || old[18+len(name)] != 0 {
			t.Errorf("linux_dirent name: %q, terminator %d", got, old[18+len(name)])
		}
		if old[len(old)-1] != unix.DT_REG {
			t.Errorf("linux_dirent of %q: last byte %d, want DT_REG", name, old[len(old)-1])
		}
		nw := packDirent64(d, 7)
		if want := (19 + len(name) + 1 + 7) &^ 7; len(nw) != want || nw[18] != unix.DT_REG ||
			string(nw[19:19+len(name)]) != name || int(le.Uint16(nw[16:])) != len(nw) {
			t.Errorf("linux_dirent64 of %q: % x", name, nw)
		}
	}
}
