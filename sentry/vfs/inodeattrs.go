package vfs

import (
	"time"

	"sync"

	"golang.org/x/sys/unix"
)

// InodeAttrs are the attributes of an inode that lives only in memory
// behind an open file with no path (a pipe's pipefs inode, a socket's
// sockfs inode): its mode, owner and times, which fstat shows and
// fchmod, fchown and a magic link's utimensat change, as Linux's
// simple_setattr keeps them. An inode embeds it and is an AttrSetter
// through it.
type InodeAttrs struct {
	mu                  sync.Mutex
	mode                uint32 // type and permission bits
	uid, gid            uint32
	atime, mtime, ctime unix.Timespec
}

// Init gives the attributes their first values: mode (type and
// permissions), owner, and t for all three times.
func (a *InodeAttrs) Init(mode, uid, gid uint32, t unix.Timespec) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.mode, a.uid, a.gid = mode, uid, gid
	a.atime, a.mtime, a.ctime = t, t, t
}

// Fill copies the attributes into st.
func (a *InodeAttrs) Fill(st *Stat) {
	a.mu.Lock()
	defer a.mu.Unlock()
	st.Mode, st.UID, st.GID = a.mode, a.uid, a.gid
	st.Atime, st.Mtime, st.Ctime = a.atime, a.mtime, a.ctime
}

// IDs returns the owner.
func (a *InodeAttrs) IDs() (uid, gid uint32) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.uid, a.gid
}

// SetAttr implements AttrSetter. Such an inode has no size to change:
// that is EINVAL, as truncate(2) of what is not a regular file.
func (a *InodeAttrs) SetAttr(at *Attr) error {
	if at.Mask&SetSize != 0 {
		return unix.EINVAL
	}
	now := RealtimeNow()
	a.mu.Lock()
	defer a.mu.Unlock()
	if at.Mask&SetMode != 0 {
		a.mode = a.mode&unix.S_IFMT | at.Mode&0o7777
	}
	if at.Mask&SetUID != 0 {
		a.uid = at.UID
	}
	if at.Mask&SetGID != 0 {
		a.gid = at.GID
	}
	if at.Mask&SetAtime != 0 {
		a.atime = TimeOrNow(at.Atime, now)
	}
	if at.Mask&SetMtime != 0 {
		a.mtime = TimeOrNow(at.Mtime, now)
	}
	a.ctime = now
	return nil
}

// TimeOrNow is ts, or now for UTIME_NOW: a time utimensat sets.
func TimeOrNow(ts, now unix.Timespec) unix.Timespec {
	if ts.Nsec == unix.UTIME_NOW {
		return now
	}
	return ts
}

// RealtimeNow is the time an in-memory inode's times are taken from: the
// host's real-time clock, which is the guest's too, read through the vDSO
// (time.Now), not a host system call.
func RealtimeNow() unix.Timespec {
	return unix.NsecToTimespec(time.Now().UnixNano())
}
