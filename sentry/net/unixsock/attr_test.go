package unixsock_test

import (
	"testing"

	"golang.org/x/sys/unix"
)

// sockStat is struct stat's mode, owner and change time (tv_sec,
// tv_nsec), at their x86-64 offsets.
func (g guest) sockStat(fd uintptr) (mode, uid, gid uint32, ctime [2]uint64) {
	st := g.Alloc(144)
	g.must("fstat", unix.SYS_FSTAT, fd, st)
	return g.ReadU32(st + 24), g.ReadU32(st + 28), g.ReadU32(st + 32), [2]uint64{g.ReadU64(st + 104), g.ReadU64(st + 112)}
}

// TestFchmodAndFchownChangeTheSocketsInode: a socket's sockfs inode
// takes a mode and an owner as any inode does (Linux's sockfs_setattr),
// its change time, zero when made, set then.
func TestFchmodAndFchownChangeTheSocketsInode(t *testing.T) {
	run(t, func(g guest) {
		s := g.socket(unix.SOCK_STREAM)
		if mode, uid, _, ctime := g.sockStat(s); mode != unix.S_IFSOCK|0o777 || uid != 0 || ctime != [2]uint64{} {
			t.Errorf("a new socket: mode %#o uid %d ctime %v, want 0140777, root's, zero", mode, uid, ctime)
		}
		g.must("fchmod", unix.SYS_FCHMOD, s, 0o600)
		if mode, _, _, ctime := g.sockStat(s); mode != unix.S_IFSOCK|0o600 || ctime == [2]uint64{} {
			t.Errorf("after fchmod 0600: mode %#o ctime %v, want 0140600 and a change time", mode, ctime)
		}
		g.must("fchown", unix.SYS_FCHOWN, s, 1234, 1234)
		if _, uid, gid, _ := g.sockStat(s); uid != 1234 || gid != 1234 {
			t.Errorf("after fchown 1234:1234: %d:%d", uid, gid)
		}
		// Each end of a pair is an inode of its own.
		a, b := g.pair(unix.SOCK_DGRAM)
		g.must("fchmod", unix.SYS_FCHMOD, a, 0o640)
		if mode, _, _, _ := g.sockStat(b); mode != unix.S_IFSOCK|0o777 {
			t.Errorf("the other end of a pair: mode %#o, want 0140777", mode)
		}
		g.must("setuid", unix.SYS_SETUID, 1000)
		if _, errno := g.Call(unix.SYS_FCHMOD, s, 0o666); errno != unix.EPERM {
			t.Errorf("fchmod of another's socket: %v, want EPERM", errno)
		}
		mine := g.socket(unix.SOCK_STREAM)
		if _, errno := g.Call(unix.SYS_FCHOWN, mine, 0, ^uintptr(0)); errno != unix.EPERM {
			t.Errorf("fchown of one's socket away to root: %v, want EPERM", errno)
		}
		g.must("fchmod of one's own socket", unix.SYS_FCHMOD, mine, 0o700)
	})
}
