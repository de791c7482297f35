package tmpfs

import (
	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/sentry/mm"
)

// File seals (memfd_create's MFD_ALLOW_SEALING, fcntl F_ADD_SEALS and
// F_GET_SEALS), as Linux's memfd.c keeps them: once added a seal stays, and
// the file refuses what it forbids with EPERM: shrinking, growing
// (fallocate past the end included), writing (write, a writable shared
// mapping), changing its exec bits;
// F_SEAL_SEAL forbids more seals.

// knownSeals are the seals Linux 6.3 and later define.
const knownSeals = unix.F_SEAL_SEAL | unix.F_SEAL_SHRINK | unix.F_SEAL_GROW | unix.F_SEAL_WRITE |
	unix.F_SEAL_FUTURE_WRITE | unix.F_SEAL_EXEC

// Seals implements the seals' half of fcntl for a memfd.
func (m *memFile) Seals() uint32 {
	n := m.n
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.seals
}

// AddSeals adds seals (F_ADD_SEALS). writablyMapped says whether a
// writable shared mapping of the file exists anywhere, which F_SEAL_WRITE
// refuses with EBUSY. The caller has checked the file is open for writing.
func (m *memFile) AddSeals(seals uint32, writablyMapped func(*mm.FilePages) bool) error {
	if seals&^knownSeals != 0 {
		return unix.EINVAL
	}
	n := m.n
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.seals&unix.F_SEAL_SEAL != 0 {
		return unix.EPERM
	}
	if seals&unix.F_SEAL_WRITE != 0 && n.seals&unix.F_SEAL_WRITE == 0 && writablyMapped(n.data) {
		return unix.EBUSY
	}
	n.seals |= seals
	return nil
}

// sealedWrite is the error a write of [off, end) gets, under n.mu.
func (n *inode) sealedWrite(end int64) error {
	switch {
	case n.seals&(unix.F_SEAL_WRITE|unix.F_SEAL_FUTURE_WRITE) != 0:
		return unix.EPERM
	case n.seals&unix.F_SEAL_GROW != 0 && end > n.size:
		return unix.EPERM
	}
	return nil
}

// sealedResize is the error a change of size to size gets, under n.mu.
func (n *inode) sealedResize(size int64) error {
	if size < n.size && n.seals&unix.F_SEAL_SHRINK != 0 || size > n.size && n.seals&unix.F_SEAL_GROW != 0 {
		return unix.EPERM
	}
	return nil
}

// MapsWritable says whether a shared mapping of the file may write it: a
// file sealed against writes never may.
func (m *memFile) MapsWritable() bool {
	return m.Seals()&(unix.F_SEAL_WRITE|unix.F_SEAL_FUTURE_WRITE) == 0
}
