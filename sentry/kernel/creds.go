package kernel

import (
	"sync"

	"github.com/moat-sandbox/moat/sentry/vfs"
)

// Credentials are a task's user and group ids and capabilities.
type Credentials struct {
	mu                         sync.Mutex
	UID, EUID, SUID, FSUID     uint32
	GID, EGID, SGID, FSGID     uint32
	Groups                     []uint32
	CapEffective, CapPermitted uint64
	CapInheritable             uint64
	CapBounding                uint64
	// CapAmbient is always within CapPermitted and CapInheritable.
	CapAmbient uint64
	keepCaps   bool // PR_SET_KEEPCAPS
	// landlock is the Landlock domain the task restricted itself with
	// (nil: none), which fork, clone and execve keep, as Linux keeps it
	// in the credentials.
	landlock *vfs.LandlockDomain
	// userns is the user namespace the ids and capabilities are of
	// (ns_user.go); the ids themselves are kernel ids.
	userns *UserNamespace
}

// NewCredentials returns credentials for uid and gid, with the capabilities
// a root process gets (all of them) or none otherwise.
func NewCredentials(uid, gid uint32, groups []uint32) *Credentials {
	c := &Credentials{UID: uid, EUID: uid, SUID: uid, FSUID: uid, GID: gid, EGID: gid, SGID: gid, FSGID: gid,
		Groups: groups, userns: rootUserNS}
	if uid == 0 {
		c.CapEffective, c.CapPermitted = allCaps, allCaps
	}
	c.CapBounding = allCaps
	return c
}

// AllCaps is every capability Linux 6.x defines (CAP_LAST_CAP is 40).
const AllCaps = 1<<41 - 1

const allCaps = AllCaps

// Lock and Unlock guard reads and writes of the fields.
func (c *Credentials) Lock()   { c.mu.Lock() }
func (c *Credentials) Unlock() { c.mu.Unlock() }

// Fork returns a copy for a new task.
func (c *Credentials) Fork() *Credentials {
	c.mu.Lock()
	defer c.mu.Unlock()
	return &Credentials{UID: c.UID, EUID: c.EUID, SUID: c.SUID, FSUID: c.FSUID, GID: c.GID, EGID: c.EGID,
		SGID: c.SGID, FSGID: c.FSGID, Groups: append([]uint32(nil), c.Groups...), CapEffective: c.CapEffective,
		CapPermitted: c.CapPermitted, CapInheritable: c.CapInheritable, CapBounding: c.CapBounding,
		CapAmbient: c.CapAmbient, keepCaps: c.keepCaps, landlock: c.landlock, userns: c.userns}
}

// FSCreds returns the credentials file operations check for t now: its
// fsuid, fsgid, groups and effective capabilities. The groups are shared,
// not copied: setgroups replaces the slice, never writes into it.
func (t *Task) FSCreds() vfs.Creds {
	c := t.creds
	c.Lock()
	defer c.Unlock()
	v := vfs.Creds{FSUID: c.FSUID, FSGID: c.FSGID, Groups: c.Groups, Caps: c.CapEffective, Landlock: c.landlock}
	if c.userns != rootUserNS {
		v.UserNS = c.userns
	}
	return v
}

// AccessCreds returns the credentials access(2) checks with: the real
// uid and gid in place of the file-system ones, and, as Linux's
// access_override_creds gives them, the permitted capabilities for a real
// uid of 0 and none for any other.
func (t *Task) AccessCreds() vfs.Creds {
	c := t.creds
	c.Lock()
	defer c.Unlock()
	caps := uint64(0)
	if c.isRootLocked(c.UID) {
		caps = c.CapPermitted
	}
	v := vfs.Creds{FSUID: c.UID, FSGID: c.GID, Groups: c.Groups, Caps: caps}
	if c.userns != rootUserNS {
		v.UserNS = c.userns
	}
	return v
}

// isRootLocked reports whether kernel uid kid is root (uid 0) in the
// credentials' user namespace, whose root capabilities(7) speaks of.
func (c *Credentials) isRootLocked(kid uint32) bool {
	id, ok := c.userns.MapUID(kid)
	return ok && id == 0
}

// UserNamespace is the user namespace of the credentials.
func (c *Credentials) UserNamespace() *UserNamespace {
	c.Lock()
	defer c.Unlock()
	return c.userns
}

// LandlockRestrict adds rs to the task's Landlock domain as a new layer
// (landlock_restrict_self): this task's alone, as Linux restricts only
// the calling thread; E2BIG past the layers a domain may stack.
func (t *Task) LandlockRestrict(rs *vfs.LandlockRuleset) error {
	c := t.creds
	c.Lock()
	defer c.Unlock()
	d, err := c.landlock.Restrict(rs)
	if err != nil {
		return err
	}
	c.landlock = d
	return nil
}

// LandlockDomain is the task's Landlock domain, nil for none.
func (t *Task) LandlockDomain() *vfs.LandlockDomain {
	c := t.creds
	c.Lock()
	defer c.Unlock()
	return c.landlock
}

// Landlocked reports whether the task restricted its file-system access
// with Landlock, which then forbids it to change its mount tree (mount,
// umount2, pivot_root answer EPERM, as Linux's hooks do): a bind mount
// would otherwise move files out from under their rules.
func (t *Task) Landlocked() bool { return t.LandlockDomain().HandlesFS() }
