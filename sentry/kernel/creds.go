package kernel

import "sync"

// Credentials are a task's user and group ids and capabilities.
type Credentials struct {
	mu                         sync.Mutex
	UID, EUID, SUID, FSUID     uint32
	GID, EGID, SGID, FSGID     uint32
	Groups                     []uint32
	CapEffective, CapPermitted uint64
	CapInheritable             uint64
}

// NewCredentials returns credentials for uid and gid, with the capabilities
// a root process gets (all of them) or none otherwise.
func NewCredentials(uid, gid uint32, groups []uint32) *Credentials {
	c := &Credentials{UID: uid, EUID: uid, SUID: uid, FSUID: uid, GID: gid, EGID: gid, SGID: gid, FSGID: gid,
		Groups: groups}
	if uid == 0 {
		c.CapEffective, c.CapPermitted = allCaps, allCaps
	}
	return c
}

// allCaps is every capability Linux 6.x defines (CAP_LAST_CAP is 40).
const allCaps = 1<<41 - 1

// Lock and Unlock guard reads and writes of the fields.
func (c *Credentials) Lock()   { c.mu.Lock() }
func (c *Credentials) Unlock() { c.mu.Unlock() }
