package pipe_test

import (
	"testing"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/platform/fake"
	"github.com/moat-sandbox/moat/sentry/kernel/kerneltest"
)

// pipeStat is what fstat(2) tells of a pipe's inode: struct stat's mode,
// owner and change time, at their x86-64 offsets.
type pipeStat struct {
	mode, uid, gid uint32
	ctime          [2]uint64 // tv_sec, tv_nsec
}

func fstat(t *testing.T, g *fake.Guest, fd uintptr) pipeStat {
	t.Helper()
	st := g.Alloc(144)
	if _, errno := g.Call(unix.SYS_FSTAT, fd, st); errno != 0 {
		t.Errorf("fstat: %v", errno)
	}
	return pipeStat{mode: g.ReadU32(st + 24), uid: g.ReadU32(st + 28), gid: g.ReadU32(st + 32),
		ctime: [2]uint64{g.ReadU64(st + 104), g.ReadU64(st + 112)}}
}

func later(a, b [2]uint64) bool { return a[0] > b[0] || a[0] == b[0] && a[1] > b[1] }

func TestFchmodAndFchownChangeThePipesOneInode(t *testing.T) {
	run(t, func(g *fake.Guest) {
		r, w := newPipe(t, g, 0)
		made := fstat(t, g, r)
		if made.mode != unix.S_IFIFO|0o600 || made.uid != 0 || made.ctime[0] == 0 {
			t.Errorf("a new pipe: %+v, want mode 010600, root's, changed when made", made)
		}
		// Either end changes the one inode both stat.
		if _, errno := g.Call(unix.SYS_FCHMOD, r, 0o2755); errno != 0 {
			t.Errorf("fchmod of the read end: %v", errno)
			return
		}
		// The change time moves on, or stays within a tick of Linux's
		// coarse clock.
		st := fstat(t, g, w)
		if st.mode != unix.S_IFIFO|0o2755 || later(made.ctime, st.ctime) {
			t.Errorf("after fchmod 02755: %+v, want mode 012755 and a change time not before %v", st, made.ctime)
		}
		// A new owner costs a group-executable file its setgid bit.
		if _, errno := g.Call(unix.SYS_FCHOWN, w, 1234, 1234); errno != 0 {
			t.Errorf("fchown of the write end: %v", errno)
			return
		}
		if st := fstat(t, g, r); st.uid != 1234 || st.gid != 1234 || st.mode != unix.S_IFIFO|0o755 {
			t.Errorf("after fchown 1234:1234: %+v, want 1234's and mode 010755", st)
		}
		empty := g.Alloc(1)
		if _, errno := g.Call(unix.SYS_FCHOWNAT, r, empty, 0, ^uintptr(0), unix.AT_EMPTY_PATH); errno != 0 {
			t.Errorf("fchownat of the pipe itself (AT_EMPTY_PATH): %v", errno)
		}
		if st := fstat(t, g, r); st.uid != 0 || st.gid != 1234 {
			t.Errorf("after fchownat 0:-1: %+v, want root's, group 1234", st)
		}
		// Once another's, and CAP_FOWNER gone, the mode is not the
		// caller's to change, nor the owner without CAP_CHOWN.
		if _, errno := g.Call(unix.SYS_FCHOWN, r, 1234, ^uintptr(0)); errno != 0 {
			t.Errorf("fchown back to 1234: %v", errno)
			return
		}
		if _, errno := g.Call(unix.SYS_SETUID, 1000); errno != 0 {
			t.Errorf("setuid 1000: %v", errno)
			return
		}
		if _, errno := g.Call(unix.SYS_FCHMOD, r, 0o666); errno != unix.EPERM {
			t.Errorf("fchmod of another's pipe: %v, want EPERM", errno)
		}
		if _, errno := g.Call(unix.SYS_FCHOWN, w, 1000, ^uintptr(0)); errno != unix.EPERM {
			t.Errorf("fchown of another's pipe to oneself: %v, want EPERM", errno)
		}
	})
}

func TestAPipesOwnerChangesItsModeAndGroupWithinItsGroups(t *testing.T) {
	runAs(t, kerneltest.Init{UID: 1000, GID: 1000, Groups: []uint32{1000, 50}}, func(g *fake.Guest) {
		r, _ := newPipe(t, g, 0)
		if _, errno := g.Call(unix.SYS_FCHMOD, r, 0o2640); errno != 0 {
			t.Errorf("the owner's fchmod: %v", errno)
		}
		if st := fstat(t, g, r); st.mode != unix.S_IFIFO|0o2640 || st.uid != 1000 {
			t.Errorf("after the owner's fchmod 02640: %+v; want mode 012640 (setgid kept: its group is the owner's)", st)
		}
		if _, errno := g.Call(unix.SYS_FCHOWN, r, ^uintptr(0), 50); errno != 0 {
			t.Errorf("fchown to a group of the owner's: %v", errno)
		}
		if _, errno := g.Call(unix.SYS_FCHOWN, r, ^uintptr(0), 7); errno != unix.EPERM {
			t.Errorf("fchown to a group not the owner's: %v, want EPERM", errno)
		}
		if _, errno := g.Call(unix.SYS_FCHOWN, r, 0, ^uintptr(0)); errno != unix.EPERM {
			t.Errorf("fchown away to root: %v, want EPERM", errno)
		}
		if st := fstat(t, g, r); st.gid != 50 || st.mode != unix.S_IFIFO|0o2640 {
			t.Errorf("after fchown to group 50: %+v; want group 50, mode 012640 (not group-executable: setgid kept)", st)
		}
	})
}
