package kernel

// Capable reports whether the task has capability cap in the sandbox's
// first user namespace, as Linux's capable() asks for the caller of a
// system call: a task in a nested user namespace has none there.
func (t *Task) Capable(cap uint) bool { return t.CapableIn(rootUserNS, cap) }

// CapableIn reports whether the task has capability cap in user
// namespace ns (Linux's ns_capable), which owns what is checked.
func (t *Task) CapableIn(ns *UserNamespace, cap uint) bool {
	c := t.creds
	c.Lock()
	defer c.Unlock()
	return capableIn(c.userns, c.CapEffective, c.EUID, ns, cap)
}

// CapableInOwn reports whether the task has capability cap in its own
// user namespace (ns_capable(current_user_ns())).
func (t *Task) CapableInOwn(cap uint) bool {
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
