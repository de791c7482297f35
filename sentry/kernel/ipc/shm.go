package ipc

import (
	"fmt"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/internal/linuxabi"
	"github.com/moat-sandbox/moat/sentry/mm"
)

// Shm is a System V shared memory segment: pages of the memory file that
// every attach maps shared. It counts its mappings (mm.Tracker); once
// removed (IPC_RMID), it goes with the last of them.
type Shm struct {
	ns    *Namespace
	perm  Perm
	size  uint64
	pages *mm.FilePages
	// Guarded by ns.mu.
	cpid, lpid          int32
	atime, dtime, ctime int64
	nattch              int
	lockedBy            uint32 // the uid whose locked memory SHM_LOCK counts it in
}

func (s *Shm) perms() *Perm { return &s.perm }

func pagesOf(size uint64) uint64 { return (size + mm.PageSize - 1) / mm.PageSize }

// Shmget implements shmget(2)'s work. A new segment must be between 1
// byte and shmmax, keep the namespace within shmall pages and shmmni
// segments (ENOSPC); an existing one must be at least size (EINVAL).
// Huge pages are ENOMEM, as on a host with none reserved.
func (ns *Namespace) Shmget(c *Caller, key int32, size uint64, flags int) (int32, error) {
	ns.mu.Lock()
	defer ns.mu.Unlock()
	check := func(s *Shm) error {
		if size > s.size {
			return unix.EINVAL
		}
		return nil
	}
	return get(&ns.shms, c, key, flags, check, func() (*Shm, error) {
		l := ns.limits
		if size < 1 || size > l.ShmMax {
			return nil, unix.EINVAL
		}
		n := pagesOf(size)
		if n == 0 || ns.shmPages+n < ns.shmPages || ns.shmPages+n > l.ShmAll {
			return nil, unix.ENOSPC
		}
		if flags&linuxabi.SHM_HUGETLB != 0 {
			return nil, unix.ENOMEM
		}
		s := &Shm{ns: ns, perm: newPerm(c, key, flags), size: size, pages: mm.NewFilePages(ns.mf, nil),
			cpid: c.PID, ctime: ns.seconds()}
		s.pages.SetSize(int64(size)) // mappings reach as far as this
		if err := ns.shms.add(s, l.ShmMNI); err != nil {
			s.pages.Release()
			return nil, err
		}
		ns.shmPages += n
		return s, nil
	})
}

// Shmat finds segment id for an attach (shmat(2)) that reads, writes
// unless readOnly, and executes if exec, checking the caller may. The
// segment counts one attach more until Attached is called, so that it
// stays while it is mapped, as Linux's do_shmat counts it.
func (ns *Namespace) Shmat(c *Caller, id int32, readOnly, exec bool) (*Shm, error) {
	ns.mu.Lock()
	defer ns.mu.Unlock()
	s, err := ns.shms.find(id)
	if err != nil {
		return nil, err
	}
	want := uint16(mayRead)
	if !readOnly {
		want |= mayWrite
	}
	if exec {
		want |= mayExec
	}
	if !s.perm.allows(c, want) {
		return nil, unix.EACCES
	}
	s.nattch++
	return s, nil
}

// Pages are the segment's pages and its size, for the mapping.
func (s *Shm) Pages() (*mm.FilePages, uint64) { return s.pages, s.size }

// Name is what /proc/<pid>/maps names a mapping of the segment: its key
// at creation, deleted (it has no name in any tree).
func (s *Shm) Name() string { return fmt.Sprintf("/SYSV%08x (deleted)", uint32(s.perm.Key)) }

// Size is the segment's size in bytes.
func (s *Shm) Size() uint64 { return s.size }

// Attached ends the attach Shmat began, by process pid, whether or not
// the mapping was made.
func (s *Shm) Attached(pid int32) {
	ns := s.ns
	ns.mu.Lock()
	defer ns.mu.Unlock()
	s.lpid = pid
	s.nattch--
	s.maybeDestroyLocked()
}

// Detached records process pid's shmdt.
func (s *Shm) Detached(pid int32) {
	s.ns.mu.Lock()
	s.lpid = pid
	s.ns.mu.Unlock()
}

// Mapped implements mm.Tracker: shm_nattch counts the mappings, and the
// times of the last attach and detach are when one came or went.
func (s *Shm) Mapped(delta int) {
	ns := s.ns
	ns.mu.Lock()
	defer ns.mu.Unlock()
	s.nattch += delta
	if delta > 0 {
		s.atime = ns.seconds()
	} else {
		s.dtime = ns.seconds()
	}
	s.maybeDestroyLocked()
}

// maybeDestroyLocked frees a removed segment that nothing maps any more.
func (s *Shm) maybeDestroyLocked() {
	if s.nattch > 0 || s.perm.Mode&modeDest == 0 || s.pages == nil {
		return
	}
	ns := s.ns
	ns.shms.remove(s)
	ns.shmPages -= pagesOf(s.size)
	ns.unlockShmLocked(s)
	s.pages.Release()
	s.pages = nil
}

// ShmStat is struct shmid64_ds.
type ShmStat struct {
	Perm                Perm
	Size                uint64
	Atime, Dtime, Ctime int64
	CPID, LPID          int32
	Nattch              uint64
}

// StatCmd says how shmctl, semctl and msgctl's *_STAT commands name the
// object and check the caller.
type StatCmd int

const (
	// StatID: IPC_STAT, by id, with read permission.
	StatID StatCmd = iota
	// StatIndex: SHM_STAT, SEM_STAT, MSG_STAT, by index, with read
	// permission.
	StatIndex
	// StatIndexAny: the *_STAT_ANY commands, by index, without it.
	StatIndexAny
)

// findStat finds an object for a *_STAT command.
func findStat[T object](r *ids[T], c *Caller, id int32, cmd StatCmd) (T, error) {
	var o T
	var err error
	if cmd == StatID {
		o, err = r.find(id)
	} else {
		o, err = r.atIndex(id)
	}
	if err != nil {
		return o, err
	}
	if cmd != StatIndexAny && !o.perms().allows(c, mayRead) {
		return o, unix.EACCES
	}
	return o, nil
}

// findOwned finds an object for IPC_SET or IPC_RMID, which only its owner
// or creator, or a caller with CAP_SYS_ADMIN, may use (EPERM).
func findOwned[T object](r *ids[T], c *Caller, id int32) (T, error) {
	o, err := r.find(id)
	if err != nil {
		return o, err
	}
	if !o.perms().owns(c) {
		return o, unix.EPERM
	}
	return o, nil
}

// ShmStat answers IPC_STAT, SHM_STAT and SHM_STAT_ANY.
func (ns *Namespace) ShmStat(c *Caller, id int32, cmd StatCmd) (ShmStat, error) {
	ns.mu.Lock()
	defer ns.mu.Unlock()
	s, err := findStat(&ns.shms, c, id, cmd)
	if err != nil {
		return ShmStat{}, err
	}
	return s.statLocked(), nil
}

func (s *Shm) statLocked() ShmStat {
	return ShmStat{Perm: s.perm, Size: s.size, Atime: s.atime, Dtime: s.dtime, Ctime: s.ctime, CPID: s.cpid,
		LPID: s.lpid, Nattch: uint64(s.nattch)}
}

// ShmSet answers IPC_SET: the owner's or CAP_SYS_ADMIN's change of the
// owner and mode.
func (ns *Namespace) ShmSet(c *Caller, id int32, set Setting) error {
	ns.mu.Lock()
	defer ns.mu.Unlock()
	s, err := findOwned(&ns.shms, c, id)
	if err != nil {
		return err
	}
	if err := s.perm.set(set); err != nil {
		return err
	}
	s.ctime = ns.seconds()
	return nil
}

// ShmRemove answers IPC_RMID: the segment loses its key at once (another
// shmget of the key makes a new one) and is freed when its last mapping
// goes; until then its id still works, even for shmat, as on Linux.
func (ns *Namespace) ShmRemove(c *Caller, id int32) error {
	ns.mu.Lock()
	defer ns.mu.Unlock()
	s, err := findOwned(&ns.shms, c, id)
	if err != nil {
		return err
	}
	s.perm.Mode |= modeDest
	s.perm.Key = unix.IPC_PRIVATE
	s.maybeDestroyLocked()
	return nil
}

// ShmLock answers SHM_LOCK (lock) and SHM_UNLOCK. Without CAP_IPC_LOCK
// the caller must own the segment and, to lock, have a RLIMIT_MEMLOCK
// (EPERM), and the memory its user has locked so stay within it
// (ENOMEM). Its pages are the memory file's either way: locking changes
// what is reported and counted, not where they are.
func (ns *Namespace) ShmLock(c *Caller, id int32, lock bool, memlock uint64) error {
	ns.mu.Lock()
	defer ns.mu.Unlock()
	s, err := ns.shms.find(id)
	if err != nil {
		return err
	}
	privileged := c.capable(unix.CAP_IPC_LOCK)
	if !privileged {
		if c.EUID != s.perm.UID && c.EUID != s.perm.CUID {
			return unix.EPERM
		}
		if lock && memlock == 0 {
			return unix.EPERM
		}
	}
	if !lock {
		ns.unlockShmLocked(s)
		return nil
	}
	if s.perm.Mode&modeLocked != 0 {
		return nil
	}
	n := pagesOf(s.size)
	limit := memlock
	if limit != ^uint64(0) {
		limit /= mm.PageSize
	}
	if used := ns.lockedPagesLocked(c.EUID); !privileged && used+n > limit {
		return unix.ENOMEM
	}
	s.perm.Mode |= modeLocked
	s.lockedBy = c.EUID
	return nil
}

// lockedPagesLocked is how many pages of segments uid has locked.
func (ns *Namespace) lockedPagesLocked(uid uint32) uint64 {
	var n uint64
	for _, s := range ns.shms.byIdx {
		if s.perm.Mode&modeLocked != 0 && s.lockedBy == uid {
			n += pagesOf(s.size)
		}
	}
	return n
}

func (ns *Namespace) unlockShmLocked(s *Shm) { s.perm.Mode &^= modeLocked }

// ShmInfoLimits is struct shminfo64, IPC_INFO's answer.
type ShmInfoLimits struct {
	ShmMax, ShmMin, ShmMNI, ShmSeg, ShmAll uint64
	_                                      [4]uint64
}

// ShmLimitsInfo answers IPC_INFO: the limits, and the highest index in use.
func (ns *Namespace) ShmLimitsInfo() (ShmInfoLimits, int) {
	ns.mu.Lock()
	defer ns.mu.Unlock()
	l := ns.limits
	return ShmInfoLimits{ShmMax: l.ShmMax, ShmMin: linuxabi.SHMMIN, ShmMNI: uint64(l.ShmMNI), ShmSeg: linuxabi.SHMSEG,
		ShmAll: l.ShmAll}, ns.shms.maxIdx()
}

// ShmUsage is struct shm_info, SHM_INFO's answer: the segments in use,
// their pages, and those in memory (every page ever touched; nothing is
// swapped).
type ShmUsage struct {
	UsedIDs       int32
	_             int32
	Tot, RSS, Swp uint64
	SwapAttempts  uint64
	SwapSuccesses uint64
}

// ShmUsageInfo answers SHM_INFO, and the highest index in use.
func (ns *Namespace) ShmUsageInfo() (ShmUsage, int) {
	ns.mu.Lock()
	defer ns.mu.Unlock()
	u := ShmUsage{UsedIDs: int32(len(ns.shms.byIdx)), Tot: ns.shmPages}
	for _, s := range ns.shms.byIdx {
		if s.pages != nil {
			u.RSS += uint64(s.pages.Pages())
		}
	}
	return u, ns.shms.maxIdx()
}

// Shms returns every segment's state, by index, for /proc/sysvipc/shm,
// with each one's pages in memory.
func (ns *Namespace) Shms() ([]ShmStat, []uint64) {
	ns.mu.Lock()
	defer ns.mu.Unlock()
	var out []ShmStat
	var rss []uint64
	for _, s := range ns.shms.all() {
		out = append(out, s.statLocked())
		var n uint64
		if s.pages != nil {
			n = uint64(s.pages.Pages())
		}
		rss = append(rss, n)
	}
	return out, rss
}
