package vfs

import "golang.org/x/sys/unix"

// Creds are the credentials a file operation is checked against: the
// caller's file-system ids, supplementary groups and effective
// capabilities (bit 1<<CAP_*), and the Landlock domain it restricted
// itself with (nil: none; landlock.go).
type Creds struct {
	FSUID, FSGID uint32
	Groups       []uint32
	Caps         uint64
	Landlock     *LandlockDomain
	// UserNS is the caller's user namespace when it is not the sandbox's
	// first (nil: the first). Caps are then of that namespace: they count
	// over a file only if it maps the file's owner and group (Linux's
	// capable_wrt_inode_uidgid), and never for what only the first
	// namespace's capabilities allow (devices, trusted.* attributes).
	UserNS FileIDMapper
}

// FileIDMapper is a user namespace as file checks ask it: whether it maps
// both a file's owner and group.
type FileIDMapper interface{ MapsFile(uid, gid uint32) bool }

// KernelCreds are the credentials of the kernel's own lookups (the
// container's working directory, the console): every capability, so no
// directory's mode stops them.
var KernelCreds = Creds{Caps: ^uint64(0)}

// capable reports whether c has cap in the sandbox's first user
// namespace, as Linux's capable() asks.
func (c *Creds) capable(cap uint) bool { return c.Caps&(1<<cap) != 0 && c.UserNS == nil }

// Capable is capable for checks made outside vfs.
func (c *Creds) Capable(cap uint) bool { return c.capable(cap) }

// CapableOver is capableOver for checks made outside vfs.
func (c *Creds) CapableOver(st *Stat, cap uint) bool { return c.capableOver(st, cap) }

// capableOver reports whether c has cap over the file whose attributes
// are st: in its own namespace, which must map the file's ids.
func (c *Creds) capableOver(st *Stat, cap uint) bool {
	return c.Caps&(1<<cap) != 0 && (c.UserNS == nil || c.UserNS.MapsFile(st.UID, st.GID))
}

func (c *Creds) inGroup(gid uint32) bool {
	if gid == c.FSGID {
		return true
	}
	for _, g := range c.Groups {
		if g == gid {
			return true
		}
	}
	return false
}

// ownerOrCapable is Linux's inode_owner_or_capable.
func (c *Creds) ownerOrCapable(st *Stat) bool {
	return st.UID == c.FSUID || c.capableOver(st, unix.CAP_FOWNER)
}

// Permission is Linux's generic_permission: the mode bits for the
// caller's class, then CAP_DAC_OVERRIDE and CAP_DAC_READ_SEARCH.
func (c *Creds) Permission(st *Stat, want uint32) error {
	perm := st.Mode & 0o7
	if st.UID == c.FSUID {
		perm = st.Mode >> 6 & 0o7
	} else if c.inGroup(st.GID) {
		perm = st.Mode >> 3 & 0o7
	}
	if want&^perm == 0 {
		return nil
	}
	isDir := st.Type() == unix.S_IFDIR
	if c.capableOver(st, unix.CAP_DAC_OVERRIDE) && (isDir || want&MayExec == 0 || st.Mode&0o111 != 0) {
		return nil
	}
	if c.capableOver(st, unix.CAP_DAC_READ_SEARCH) && (want == MayRead || isDir && want&MayWrite == 0) {
		return nil
	}
	return unix.EACCES
}

// searchesAll reports whether c may search every directory whatever its
// mode: CAP_DAC_OVERRIDE and CAP_DAC_READ_SEARCH each grant it (in a
// nested user namespace only over the directories it maps: Permission
// asks then).
func (c *Creds) searchesAll() bool {
	return c.capable(unix.CAP_DAC_OVERRIDE) || c.capable(unix.CAP_DAC_READ_SEARCH)
}

// maySearch is Linux's may_lookup: a name is looked up in dir only if the
// caller may search it (execute permission on a directory).
func (c *Creds) maySearch(dir *Dentry) error {
	if c.searchesAll() {
		return nil
	}
	st, err := AccessStat(dir.inode)
	if err != nil {
		return err
	}
	return c.Permission(&st, MayExec)
}
