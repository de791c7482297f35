package kernel

import (
	"sort"

	"golang.org/x/sys/unix"
)

// The set*id family, with Linux's rules: a process with CAP_SETUID (or
// CAP_SETGID) may set any id; others only to ids they already hold. Root's
// capabilities follow its uids as capabilities(7) describes.

const noChange = ^uint32(0) // -1: leave the id as it is

// SetUIDs implements setresuid(2), setreuid(2) and setuid(2): each of r, e
// and s is an id or noChange. allPrivileged is setuid's rule: with
// CAP_SETUID all three are set.
func (c *Credentials) SetUIDs(r, e, s uint32) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.CapEffective&(1<<unix.CAP_SETUID) == 0 {
		for _, id := range []uint32{r, e, s} {
			if id != noChange && id != c.UID && id != c.EUID && id != c.SUID {
				return unix.EPERM
			}
		}
	}
	oldR, oldE, oldS := c.UID, c.EUID, c.SUID
	if r != noChange {
		c.UID = r
	}
	if e != noChange {
		c.EUID = e
	}
	if s != noChange {
		c.SUID = s
	}
	c.FSUID = c.EUID
	c.fixCaps(oldR, oldE, oldS)
	return nil
}

// fixCaps applies capabilities(7)'s rules for uid changes.
func (c *Credentials) fixCaps(oldR, oldE, oldS uint32) {
	wasRoot := oldR == 0 || oldE == 0 || oldS == 0
	if wasRoot && c.UID != 0 && c.EUID != 0 && c.SUID != 0 && !c.keepCaps {
		c.CapPermitted, c.CapEffective = 0, 0
	}
	if oldE == 0 && c.EUID != 0 {
		c.CapEffective = 0
	}
	if oldE != 0 && c.EUID == 0 {
		c.CapEffective = c.CapPermitted
	}
}

// SetUID implements setuid(2).
func (c *Credentials) SetUID(uid uint32) error {
	c.mu.Lock()
	priv := c.CapEffective&(1<<unix.CAP_SETUID) != 0
	c.mu.Unlock()
	if priv {
		return c.SetUIDs(uid, uid, uid)
	}
	return c.SetUIDs(noChange, uid, noChange)
}

// SetGIDs implements setresgid(2) and setregid(2).
func (c *Credentials) SetGIDs(r, e, s uint32) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.CapEffective&(1<<unix.CAP_SETGID) == 0 {
		for _, id := range []uint32{r, e, s} {
			if id != noChange && id != c.GID && id != c.EGID && id != c.SGID {
				return unix.EPERM
			}
		}
	}
	if r != noChange {
		c.GID = r
	}
	if e != noChange {
		c.EGID = e
	}
	if s != noChange {
		c.SGID = s
	}
	c.FSGID = c.EGID
	return nil
}

// SetGID implements setgid(2).
func (c *Credentials) SetGID(gid uint32) error {
	c.mu.Lock()
	priv := c.CapEffective&(1<<unix.CAP_SETGID) != 0
	c.mu.Unlock()
	if priv {
		return c.SetGIDs(gid, gid, gid)
	}
	return c.SetGIDs(noChange, gid, noChange)
}

// SetFSUID implements setfsuid(2): it returns the old fsuid whether or not
// the change was allowed.
func (c *Credentials) SetFSUID(uid uint32) uint32 {
	c.mu.Lock()
	defer c.mu.Unlock()
	old := c.FSUID
	if c.CapEffective&(1<<unix.CAP_SETUID) != 0 || uid == c.UID || uid == c.EUID || uid == c.SUID || uid == c.FSUID {
		c.FSUID = uid
	}
	return old
}

// SetFSGID implements setfsgid(2).
func (c *Credentials) SetFSGID(gid uint32) uint32 {
	c.mu.Lock()
	defer c.mu.Unlock()
	old := c.FSGID
	if c.CapEffective&(1<<unix.CAP_SETGID) != 0 || gid == c.GID || gid == c.EGID || gid == c.SGID || gid == c.FSGID {
		c.FSGID = gid
	}
	return old
}

// SetGroups implements setgroups(2).
func (c *Credentials) SetGroups(groups []uint32) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.CapEffective&(1<<unix.CAP_SETGID) == 0 {
		return unix.EPERM
	}
	sort.Slice(groups, func(i, j int) bool { return groups[i] < groups[j] })
	c.Groups = groups
	return nil
}

// SetCaps implements capset(2): permitted may only shrink, effective and
// inheritable stay within it.
func (c *Credentials) SetCaps(eff, prm, inh uint64) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if prm&^c.CapPermitted != 0 || eff&^prm != 0 {
		return unix.EPERM
	}
	if inh&^(c.CapInheritable|c.CapPermitted) != 0 && c.CapEffective&(1<<unix.CAP_SETPCAP) == 0 {
		return unix.EPERM
	}
	c.CapEffective, c.CapPermitted, c.CapInheritable = eff, prm, inh
	return nil
}

// SetKeepCaps records PR_SET_KEEPCAPS.
func (c *Credentials) SetKeepCaps(on bool) {
	c.mu.Lock()
	c.keepCaps = on
	c.mu.Unlock()
}
