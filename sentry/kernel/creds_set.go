package kernel

import (
	"sort"

	"golang.org/x/sys/unix"
)

// The set*id family, with Linux's rules: a process with CAP_SETUID (or
// CAP_SETGID) may set any id; others only to ids they already hold. Root's
// capabilities follow its uids as capabilities(7) describes.

const noChange = ^uint32(0) // -1: leave the id as it is

// setIDs sets the real, effective and saved ids in ids to want (each an
// id or noChange) and the fs id to the new effective one. Without the
// capability cap, each may only become one of the three held now.
func (c *Credentials) setIDs(cap uint, ids [3]*uint32, fs *uint32, want [3]uint32) error {
	if !c.hasCapLocked(cap) {
		for _, id := range want {
			if id != noChange && id != *ids[0] && id != *ids[1] && id != *ids[2] {
				return unix.EPERM
			}
		}
	}
	for i, id := range want {
		if id != noChange {
			*ids[i] = id
		}
	}
	*fs = *ids[1]
	return nil
}

// SetUIDs implements setresuid(2): each of r, e and s is an id or
// noChange.
func (c *Credentials) SetUIDs(r, e, s uint32) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	oldR, oldE, oldS := c.UID, c.EUID, c.SUID
	if err := c.setIDs(unix.CAP_SETUID, [3]*uint32{&c.UID, &c.EUID, &c.SUID}, &c.FSUID, [3]uint32{r, e, s}); err != nil {
		return err
	}
	c.fixCaps(oldR, oldE, oldS)
	return nil
}

// setREIDs is setreuid(2)'s rule over ids (real, effective, saved):
// without cap, the real id may only become the real or effective one (not
// the saved one), the effective id any of the three; setting the real id,
// or the effective one to other than the real one, also sets the saved id
// to the new effective one.
func (c *Credentials) setREIDs(cap uint, ids [3]*uint32, fs *uint32, r, e uint32) error {
	if r != noChange && r != *ids[0] && r != *ids[1] && !c.hasCapLocked(cap) {
		return unix.EPERM
	}
	s := noChange
	if r != noChange || (e != noChange && e != *ids[0]) {
		s = e
		if e == noChange {
			s = *ids[1]
		}
	}
	return c.setIDs(cap, ids, fs, [3]uint32{r, e, s})
}

// SetREUID implements setreuid(2).
func (c *Credentials) SetREUID(r, e uint32) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	oldR, oldE, oldS := c.UID, c.EUID, c.SUID
	if err := c.setREIDs(unix.CAP_SETUID, [3]*uint32{&c.UID, &c.EUID, &c.SUID}, &c.FSUID, r, e); err != nil {
		return err
	}
	c.fixCaps(oldR, oldE, oldS)
	return nil
}

// SetREGID implements setregid(2).
func (c *Credentials) SetREGID(r, e uint32) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.setREIDs(unix.CAP_SETGID, [3]*uint32{&c.GID, &c.EGID, &c.SGID}, &c.FSGID, r, e)
}

// fixCaps applies capabilities(7)'s rules for uid changes.
func (c *Credentials) fixCaps(oldR, oldE, oldS uint32) {
	root := c.isRootLocked
	wasRoot := root(oldR) || root(oldE) || root(oldS)
	if wasRoot && !root(c.UID) && !root(c.EUID) && !root(c.SUID) {
		if !c.keepCaps {
			c.CapPermitted, c.CapEffective = 0, 0
		}
		// Even with keepcaps: a program that drops root and then
		// execs expects to run without capabilities.
		c.CapAmbient = 0
	}
	if root(oldE) && !root(c.EUID) {
		c.CapEffective = 0
	}
	if !root(oldE) && root(c.EUID) {
		c.CapEffective = c.CapPermitted
	}
}

// SetUID implements setuid(2): with CAP_SETUID all three uids are set,
// without it the effective one, to the real or the saved uid only.
func (c *Credentials) SetUID(uid uint32) error {
	c.mu.Lock()
	privileged, held := c.hasCapLocked(unix.CAP_SETUID), uid == c.UID || uid == c.SUID
	c.mu.Unlock()
	switch {
	case privileged:
		return c.SetUIDs(uid, uid, uid)
	case !held:
		return unix.EPERM
	}
	return c.SetUIDs(noChange, uid, noChange)
}

// SetGIDs implements setresgid(2).
func (c *Credentials) SetGIDs(r, e, s uint32) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.setIDs(unix.CAP_SETGID, [3]*uint32{&c.GID, &c.EGID, &c.SGID}, &c.FSGID, [3]uint32{r, e, s})
}

// SetGID implements setgid(2), as SetUID does setuid(2).
func (c *Credentials) SetGID(gid uint32) error {
	c.mu.Lock()
	privileged, held := c.hasCapLocked(unix.CAP_SETGID), gid == c.GID || gid == c.SGID
	c.mu.Unlock()
	switch {
	case privileged:
		return c.SetGIDs(gid, gid, gid)
	case !held:
		return unix.EPERM
	}
	return c.SetGIDs(noChange, gid, noChange)
}

// hasCapLocked reports whether cap is in the effective set (c.mu held).
func (c *Credentials) hasCapLocked(cap uint) bool { return c.CapEffective&(1<<cap) != 0 }

// SetFSUID implements setfsuid(2): it returns the old fsuid whether or not
// the change was allowed.
func (c *Credentials) SetFSUID(uid uint32) uint32 {
	c.mu.Lock()
	defer c.mu.Unlock()
	old := c.FSUID
	if c.hasCapLocked(unix.CAP_SETUID) || uid == c.UID || uid == c.EUID || uid == c.SUID || uid == c.FSUID {
		c.FSUID = uid
	}
	// capabilities(7): the file system capabilities follow the fs uid in
	// and out of 0.
	switch root := c.isRootLocked; {
	case root(old) && !root(c.FSUID):
		c.CapEffective &^= fsCapabilities
	case !root(old) && root(c.FSUID):
		c.CapEffective |= c.CapPermitted & fsCapabilities
	}
	return old
}

// fsCapabilities are those an fs uid change to or from 0 raises or drops
// (Linux's CAP_FS_SET).
const fsCapabilities = 1<<unix.CAP_CHOWN | 1<<unix.CAP_DAC_OVERRIDE | 1<<unix.CAP_DAC_READ_SEARCH |
	1<<unix.CAP_FOWNER | 1<<unix.CAP_FSETID | 1<<unix.CAP_LINUX_IMMUTABLE | 1<<unix.CAP_MKNOD |
	1<<unix.CAP_MAC_OVERRIDE

// SetFSGID implements setfsgid(2).
func (c *Credentials) SetFSGID(gid uint32) uint32 {
	c.mu.Lock()
	defer c.mu.Unlock()
	old := c.FSGID
	if c.hasCapLocked(unix.CAP_SETGID) || gid == c.GID || gid == c.EGID || gid == c.SGID || gid == c.FSGID {
		c.FSGID = gid
	}
	return old
}

// SetGroups implements setgroups(2).
func (c *Credentials) SetGroups(groups []uint32) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.hasCapLocked(unix.CAP_SETGID) || !c.userns.SetgroupsAllowed() {
		return unix.EPERM
	}
	sort.Slice(groups, func(i, j int) bool { return groups[i] < groups[j] })
	c.Groups = groups
	return nil
}

// SetCaps implements capset(2): permitted may only shrink, effective
// stays within it, and inheritable may gain only permitted capabilities
// (any, with CAP_SETPCAP) that the bounding set holds.
func (c *Credentials) SetCaps(eff, prm, inh uint64) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if prm&^c.CapPermitted != 0 || eff&^prm != 0 {
		return unix.EPERM
	}
	if inh&^(c.CapInheritable|c.CapPermitted) != 0 && !c.hasCapLocked(unix.CAP_SETPCAP) {
		return unix.EPERM
	}
	if inh&^(c.CapInheritable|c.CapBounding) != 0 {
		return unix.EPERM
	}
	c.CapEffective, c.CapPermitted, c.CapInheritable = eff, prm, inh
	c.CapAmbient &= prm & inh
	return nil
}

// AmbientCap implements prctl(PR_CAP_AMBIENT, op, capability): IS_SET
// answers 0 or 1; RAISE needs the capability permitted and inheritable.
// CLEAR_ALL takes no capability (the caller checks the other arguments).
func (c *Credentials) AmbientCap(op, capability uint64) (uintptr, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if op == unix.PR_CAP_AMBIENT_CLEAR_ALL {
		if capability != 0 {
			return 0, unix.EINVAL
		}
		c.CapAmbient = 0
		return 0, nil
	}
	if capability > unix.CAP_LAST_CAP {
		return 0, unix.EINVAL
	}
	bit := uint64(1) << capability
	switch op {
	case unix.PR_CAP_AMBIENT_IS_SET:
		if c.CapAmbient&bit != 0 {
			return 1, nil
		}
		return 0, nil
	case unix.PR_CAP_AMBIENT_RAISE:
		if c.CapPermitted&c.CapInheritable&bit == 0 {
			return 0, unix.EPERM
		}
		c.CapAmbient |= bit
	case unix.PR_CAP_AMBIENT_LOWER:
		c.CapAmbient &^= bit
	default:
		return 0, unix.EINVAL
	}
	return 0, nil
}

// SetKeepCaps records PR_SET_KEEPCAPS.
func (c *Credentials) SetKeepCaps(on bool) {
	c.mu.Lock()
	c.keepCaps = on
	c.mu.Unlock()
}

// SetUID, SetREUID and SetUIDs are the Credentials methods for the task's
// own credentials (setuid, setreuid, setresuid): a new real uid also moves
// the task to that user's RLIMIT_NPROC count.
func (t *Task) SetUID(uid uint32) error { return t.afterUIDChange(t.creds.SetUID(uid)) }

func (t *Task) SetREUID(r, e uint32) error { return t.afterUIDChange(t.creds.SetREUID(r, e)) }

func (t *Task) SetUIDs(r, e, s uint32) error { return t.afterUIDChange(t.creds.SetUIDs(r, e, s)) }

func (t *Task) afterUIDChange(err error) error {
	if err == nil {
		t.recountNPROC()
	}
	return err
}
