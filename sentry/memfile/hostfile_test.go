package memfile

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// openHostFile writes data into a new file and opens it read-only.
func openHostFile(t *testing.T, data []byte) int {
	t.Helper()
	path := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(fd) })
	var st unix.Statfs_t
	if unix.Fstatfs(fd, &st) == nil && st.Flags&unix.ST_NOEXEC != 0 {
		t.Skip("the temporary directory is on a noexec mount")
	}
	return fd
}

// TestHostFiles: a host file is mapped only once enabled; its pages read as
// the file at an offset of its own, apart from the next file's and the
// memory file's, are never exclusive nor freed, and HostFileAt finds it.
func TestHostFiles(t *testing.T) {
	f, err := New()
	if err != nil {
		t.Fatal(err)
	}
	a := bytes.Repeat([]byte("a"), PageSize+10)
	fdA, fdB := openHostFile(t, a), openHostFile(t, []byte("b"))
	if _, err := f.MapHostFile(fdA, uint64(len(a))); err != ErrNoHostFiles {
		t.Fatalf("MapHostFile before EnableHostFiles: %v, want ErrNoHostFiles", err)
	}
	f.EnableHostFiles()
	offA, err := f.MapHostFile(fdA, uint64(len(a)))
	if err != nil {
		t.Fatal(err)
	}
	offB, err := f.MapHostFile(fdB, 1)
	if err != nil {
		t.Fatal(err)
	}
	if offA < fileSize || offB < offA+2*PageSize+hostGap {
		t.Fatalf("host files at %#x and %#x: not above the memory file, or not apart", offA, offB)
	}
	if got := f.Slice(offA, uint64(len(a))); !bytes.Equal(got, a) {
		t.Fatalf("the first host file reads %q...", got[:8])
	}
	if got := f.Slice(offB, PageSize); got[0] != 'b' || got[1] != 0 {
		t.Fatalf("the second host file reads %q, want b and zeros", got[:2])
	}
	if f.Exclusive(offA, PageSize) {
		t.Error("a host file's page is exclusive: it would be written in place")
	}
	f.IncRef(offA, PageSize)
	f.DecRef(offA, PageSize)
	f.DecRef(offA, PageSize)
	if len(f.shared) != 0 || len(f.dirty) != 0 {
		t.Errorf("host pages counted (%v) or freed (%v)", f.shared, f.dirty)
	}
	f.Populate(offA, 2*PageSize) // reads, never writes, a read-only page
	fd, fileOff, ok := f.HostFileAt(offA+PageSize, PageSize)
	if !ok || fileOff != PageSize {
		t.Fatalf("HostFileAt(the first file's second page) = %d, %#x, %v", fd, fileOff, ok)
	}
	var st1, st2 unix.Stat_t
	if unix.Fstat(fd, &st1) != nil || unix.Fstat(fdA, &st2) != nil || st1.Ino != st2.Ino {
		t.Errorf("HostFileAt gave a descriptor of another file")
	}
	if fd, _, ok := f.HostFileAt(offA+PageSize, 2*PageSize); !ok || fd != -1 {
		t.Errorf("a range running past the first file: fd %d, ok %v; want -1, true", fd, ok)
	}
	if _, _, ok := f.HostFileAt(PageSize, PageSize); ok {
		t.Error("the memory file's own page is named a host file's")
	}
}
