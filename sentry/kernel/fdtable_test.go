package kernel

import (
	"testing"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/sentry/vfs"
)

// countedImpl is an open file that counts its releases (its description's
// last reference going).
type countedImpl struct{ releases int }

func (c *countedImpl) Read(*vfs.IOSeq, int64) (int, error)  { return 0, nil }
func (c *countedImpl) Write(*vfs.IOSeq, int64) (int, error) { return 0, nil }
func (c *countedImpl) Stat() (vfs.Stat, error)              { return vfs.Stat{}, nil }
func (c *countedImpl) Ioctl(uint32, uintptr, vfs.IoctlIO) (uintptr, error) {
	return 0, unix.ENOTTY
}
func (c *countedImpl) Release() { c.releases++ }

// newFile returns a file description and its impl; the caller holds the
// description's first reference.
func newFile() (*vfs.File, *countedImpl) {
	impl := &countedImpl{}
	return vfs.NewFile(impl, vfs.Path{}, unix.O_RDWR), impl
}

// installed returns a file the table alone holds, at the lowest free fd.
func installed(t *testing.T, tab *FDTable) (int32, *countedImpl) {
	t.Helper()
	f, impl := newFile()
	fd, err := tab.Install(f, 0, false, 1024)
	if err != nil {
		t.Fatalf("install: %v", err)
	}
	f.DecRef()
	return fd, impl
}

func TestInstallTakesTheLowestFreeFDAtOrAboveTheMinimum(t *testing.T) {
	tab := NewFDTable()
	for want := int32(0); want < 3; want++ {
		if fd, _ := installed(t, tab); fd != want {
			t.Fatalf("fd %d, want %d", fd, want)
		}
	}
	f, _ := newFile()
	defer f.DecRef()
	if fd, err := tab.Install(f, 1, false, 1024); fd != 3 || err != nil {
		t.Errorf("install at or above 1 with 0-2 taken = %d, %v; want 3", fd, err)
	}
	if _, err := tab.Remove(1); err != nil {
		t.Fatal(err)
	}
	if fd, _ := tab.Install(f, 0, false, 1024); fd != 1 {
		t.Errorf("install after closing fd 1 = %d, want the hole at 1", fd)
	}
	if fd, _ := tab.Install(f, 10, false, 1024); fd != 10 {
		t.Errorf("install at or above 10 = %d, want 10 (F_DUPFD's minimum, past the table's end)", fd)
	}
}

func TestInstallIsEMFILEAtTheNOFILELimit(t *testing.T) {
	tab := NewFDTable()
	f, _ := newFile()
	defer f.DecRef()
	for i := 0; i < 4; i++ {
		if _, err := tab.Install(f, 0, false, 4); err != nil {
			t.Fatalf("fd %d of a limit of 4: %v", i, err)
		}
	}
	if fd, err := tab.Install(f, 0, false, 4); err != unix.EMFILE {
		t.Errorf("a fifth fd under a limit of 4 = %d, %v; want EMFILE", fd, err)
	}
	if _, err := tab.Install(f, 4, false, 4); err != unix.EMFILE {
		t.Errorf("a minimum at the limit = %v, want EMFILE", err)
	}
}

func TestInstallAtReplacesTheFileAndReleasesTheOldOne(t *testing.T) {
	tab := NewFDTable()
	fd, old := installed(t, tab)
	f, impl := newFile()
	if err := tab.InstallAt(fd, f, false, 1024); err != nil {
		t.Fatal(err)
	}
	f.DecRef()
	if old.releases != 1 {
		t.Errorf("the replaced file was released %d times, want once", old.releases)
	}
	got, err := tab.Get(fd)
	if err != nil || got != f {
		t.Fatalf("get(%d) = %v, %v; want the new file", fd, got, err)
	}
	got.DecRef()
	if impl.releases != 0 {
		t.Errorf("the new file was released while the table holds it")
	}
}

func TestInstallAtOutsideTheLimitIsEBADF(t *testing.T) {
	tab := NewFDTable()
	f, impl := newFile()
	for _, fd := range []int32{-1, 8, 9} {
		if err := tab.InstallAt(fd, f, false, 8); err != unix.EBADF {
			t.Errorf("dup2 to %d under a limit of 8 = %v, want EBADF", fd, err)
		}
	}
	f.DecRef()
	if impl.releases != 1 {
		t.Errorf("a refused InstallAt kept a reference")
	}
}

func TestGetRemoveAndFlagsOfAFreeFDAreEBADF(t *testing.T) {
	tab := NewFDTable()
	fd, _ := installed(t, tab)
	tab.Remove(fd)
	for _, bad := range []int32{-1, fd, 5} {
		if _, err := tab.Get(bad); err != unix.EBADF {
			t.Errorf("get(%d) = %v, want EBADF", bad, err)
		}
		if _, err := tab.Remove(bad); err != unix.EBADF {
			t.Errorf("remove(%d) = %v, want EBADF", bad, err)
		}
		if _, err := tab.CloseOnExec(bad); err != unix.EBADF {
			t.Errorf("close-on-exec of %d = %v, want EBADF", bad, err)
		}
		if err := tab.SetCloseOnExec(bad, true); err != unix.EBADF {
			t.Errorf("setting close-on-exec of %d = %v, want EBADF", bad, err)
		}
	}
}

func TestRemoveHandsTheTablesReferenceToTheCaller(t *testing.T) {
	tab := NewFDTable()
	fd, impl := installed(t, tab)
	f, err := tab.Remove(fd)
	if err != nil {
		t.Fatal(err)
	}
	if impl.releases != 0 {
		t.Fatalf("released before the caller dropped the reference")
	}
	f.DecRef()
	if impl.releases != 1 {
		t.Errorf("releases %d after the caller's DecRef, want 1", impl.releases)
	}
}

func TestDupsShareTheFileButNotTheCloseOnExecFlag(t *testing.T) {
	tab := NewFDTable()
	f, impl := newFile()
	a, _ := tab.Install(f, 0, true, 1024)
	b, _ := tab.Install(f, 0, false, 1024)
	f.DecRef()
	if on, _ := tab.CloseOnExec(a); !on {
		t.Errorf("fd %d lost its close-on-exec flag", a)
	}
	if on, _ := tab.CloseOnExec(b); on {
		t.Errorf("fd %d has the close-on-exec flag of its dup", b)
	}
	tab.Remove(a)
	f.DecRef() // Remove's reference
	if impl.releases != 0 {
		t.Errorf("closing one fd released the file the other still holds")
	}
	tab.CloseRange(0, ^uint32(0), false)
	if impl.releases != 1 {
		t.Errorf("releases %d after both fds closed, want 1", impl.releases)
	}
}

func TestCloseRangeClosesOnlyItsRange(t *testing.T) {
	tab := NewFDTable()
	var impls []*countedImpl
	for i := 0; i < 5; i++ {
		_, impl := installed(t, tab)
		impls = append(impls, impl)
	}
	tab.CloseRange(1, 3, false)
	for fd, impl := range impls {
		want := 0
		if fd >= 1 && fd <= 3 {
			want = 1
		}
		if impl.releases != want {
			t.Errorf("fd %d released %d times by close_range(1, 3), want %d", fd, impl.releases, want)
		}
	}
	tab.CloseRange(4, 4, true)
	if on, _ := tab.CloseOnExec(4); !on || impls[4].releases != 0 {
		t.Errorf("CLOSE_RANGE_CLOEXEC: flag %v, released %d; want the flag set and the file kept", on, impls[4].releases)
	}
	if on, _ := tab.CloseOnExec(0); on {
		t.Errorf("CLOSE_RANGE_CLOEXEC on fd 4 marked fd 0")
	}
}

func TestCloseOnExecClosesOnlyMarkedFDs(t *testing.T) {
	tab := NewFDTable()
	keep, kept := installed(t, tab)
	drop, dropped := installed(t, tab)
	if err := tab.SetCloseOnExec(drop, true); err != nil {
		t.Fatal(err)
	}
	tab.closeOnExec()
	if dropped.releases != 1 || kept.releases != 0 {
		t.Errorf("after exec: close-on-exec file released %d times, other %d; want 1 and 0", dropped.releases, kept.releases)
	}
	if _, err := tab.Get(drop); err != unix.EBADF {
		t.Errorf("fd %d is still open after exec", drop)
	}
	if f, err := tab.Get(keep); err != nil {
		t.Errorf("fd %d without the flag was closed by exec", keep)
	} else {
		f.DecRef()
	}
}

func TestAForkedTableHoldsTheSameFilesInSlotsOfItsOwn(t *testing.T) {
	tab := NewFDTable()
	fd, impl := installed(t, tab)
	tab.SetCloseOnExec(fd, true)
	orig, _ := tab.Get(fd)
	orig.DecRef()
	child := tab.Fork()
	if f, _ := child.Get(fd); f != orig {
		t.Errorf("the fork's fd %d is not the parent's file", fd)
	} else {
		f.DecRef()
	}
	if on, _ := child.CloseOnExec(fd); !on {
		t.Errorf("the fork lost the close-on-exec flag")
	}
	removed, _ := child.Remove(fd)
	removed.DecRef()
	if impl.releases != 0 {
		t.Fatalf("closing the child's fd released the file the parent holds")
	}
	nfd, _ := installed(t, child)
	if f, err := tab.Get(nfd); err != nil || f != orig {
		t.Errorf("the parent's fd %d is %v, %v after the child reused the number; want its own file", nfd, f, err)
	} else {
		f.DecRef()
	}
	tab.DecRef()
	if impl.releases != 1 {
		t.Errorf("releases %d once both tables let go, want 1", impl.releases)
	}
}

func TestTheLastUserOfASharedTableClosesItsFiles(t *testing.T) {
	tab := NewFDTable()
	_, impl := installed(t, tab)
	tab.IncRef() // CLONE_FILES
	if !tab.shared() {
		t.Errorf("a table with two users is not shared")
	}
	tab.DecRef()
	if impl.releases != 0 {
		t.Fatalf("the first user's exit closed the shared table's files")
	}
	if tab.shared() {
		t.Errorf("a table with one user left is shared")
	}
	tab.DecRef()
	if impl.releases != 1 {
		t.Errorf("releases %d after the last user, want 1", impl.releases)
	}
}
