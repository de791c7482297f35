package kernel

import "golang.org/x/sys/unix"

// execProgram is what of the program file execve runs decides the new
// credentials: its set-user-ID and set-group-ID bits and owner, unless
// its mount is nosuid. Files carry no capabilities in moat (no
// security.capability attribute is honoured), so only these count.
type execProgram struct {
	Mode     uint32
	UID, GID uint32
	NoSUID   bool // the file's mount has MS_NOSUID
}

// execUnsafe is what makes an exec that would gain privilege unsafe
// (Linux's bprm->unsafe): no_new_privs, or a tracer without
// CAP_SYS_PTRACE, who could steer the privileged program.
type execUnsafe struct {
	NoNewPrivs      bool
	UncapableTracer bool
}

// forExec returns the credentials a program runs with after execve, as
// execve(2) and capabilities(7) ("Transformation of capabilities during
// execve()") give them, and whether the exec is secure (AT_SECURE: the
// C library then ignores LD_PRELOAD and the like):
//   - a set-user-ID file sets the effective uid to its owner; a
//     set-group-ID one (that group-executable too: else it marks
//     mandatory locking) the effective gid to its group;
//   - the new permitted set is the ambient one, or, for a process whose
//     real or new effective uid is 0, the bounding set joined with the
//     inheritable one; the effective set is the permitted one if the
//     effective uid is 0, else the ambient one;
//   - a gain (new ids, or a permitted capability not held before) that
//     is unsafe is refused: the ids stay (unless only a tracer made it
//     unsafe and the caller holds CAP_SETUID) and the permitted set is
//     capped by the old one;
//   - ambient capabilities do not survive a set-ID exec; the saved and
//     file-system ids follow the effective ones.
func (c *Credentials) forExec(f execProgram, u execUnsafe) (*Credentials, bool) {
	old := c.Fork()
	n := c.Fork()
	if !f.NoSUID {
		if f.Mode&unix.S_ISUID != 0 {
			n.EUID = f.UID
		}
		if f.Mode&(unix.S_ISGID|unix.S_IXGRP) == unix.S_ISGID|unix.S_IXGRP {
			n.EGID = f.GID
		}
	}
	n.CapPermitted = 0
	effective := false
	if n.isRootLocked(n.EUID) || n.isRootLocked(n.UID) {
		n.CapPermitted = old.CapBounding | old.CapInheritable
	}
	if n.isRootLocked(n.EUID) {
		effective = true
	}
	setID := n.EUID != old.UID || n.EGID != old.GID
	gains := setID || n.CapPermitted&^old.CapPermitted != 0
	if gains && (u.NoNewPrivs || u.UncapableTracer) {
		if u.NoNewPrivs || old.CapEffective&(1<<unix.CAP_SETUID) == 0 {
			n.EUID, n.EGID = n.UID, n.GID
		}
		n.CapPermitted &= old.CapPermitted
	}
	n.SUID, n.FSUID = n.EUID, n.EUID
	n.SGID, n.FSGID = n.EGID, n.EGID
	if setID {
		n.CapAmbient = 0
	}
	n.CapPermitted |= n.CapAmbient
	if effective {
		n.CapEffective = n.CapPermitted
	} else {
		n.CapEffective = n.CapAmbient
	}
	n.keepCaps = false
	secure := setID || (!n.isRootLocked(n.UID) && (effective || n.CapPermitted&^n.CapAmbient != 0))
	return n, secure
}

// changedForExec reports whether next differs from c as Linux's
// commit_creds counts a change that makes a process lose its parent-death
// signal: other effective or file-system ids, or permitted capabilities
// it did not hold.
func (c *Credentials) changedForExec(next *Credentials) bool {
	c.Lock()
	defer c.Unlock()
	return c.EUID != next.EUID || c.EGID != next.EGID || c.FSUID != next.FSUID || c.FSGID != next.FSGID ||
		next.CapPermitted&^c.CapPermitted != 0
}

// replaceWith makes c hold next's ids and capabilities (the task's
// credentials are one object others hold a pointer to).
func (c *Credentials) replaceWith(next *Credentials) {
	c.Lock()
	defer c.Unlock()
	c.UID, c.EUID, c.SUID, c.FSUID = next.UID, next.EUID, next.SUID, next.FSUID
	c.GID, c.EGID, c.SGID, c.FSGID = next.GID, next.EGID, next.SGID, next.FSGID
	c.CapEffective, c.CapPermitted, c.CapInheritable = next.CapEffective, next.CapPermitted, next.CapInheritable
	c.CapBounding, c.CapAmbient, c.keepCaps = next.CapBounding, next.CapAmbient, next.keepCaps
	c.userns = next.userns
}
