package kernel

// Capable reports whether the task has capability cap in its effective
// set, as Linux's capable() asks for the caller of a system call.
func (t *Task) Capable(cap uint) bool {
	c := t.creds
	c.Lock()
	defer c.Unlock()
	return c.hasCapLocked(cap)
}

// IDs are the ids a permission check compares: real, effective and saved
// user ids, and the effective group id and groups.
type IDs struct {
	UID, EUID, SUID uint32
	EGID            uint32
	Groups          []uint32
}

// IDs returns the task's ids now.
func (t *Task) IDs() IDs {
	c := t.creds
	c.Lock()
	defer c.Unlock()
	return IDs{UID: c.UID, EUID: c.EUID, SUID: c.SUID, EGID: c.EGID, Groups: append([]uint32(nil), c.Groups...)}
}

// SameOwner reports whether t may change target's scheduling as its owner
// (Linux's check_same_owner and set_one_prio_perm): t's effective uid is
// target's real or effective uid.
func (t *Task) SameOwner(target *Task) bool {
	t.creds.Lock()
	euid := t.creds.EUID
	t.creds.Unlock()
	c := target.creds
	c.Lock()
	defer c.Unlock()
	return euid == c.UID || euid == c.EUID
}
