package vfs

import "golang.org/x/sys/unix"

// Landlock's rules for link and rename (landlock(7), REFER). A name made
// in the same directory needs the right to make (and for a rename, to
// remove) that type of file there. A file that changes directory needs
// REFER on both directories as well, and must gain no right by the move:
// for each layer, no right the layer handles may be allowed beneath the
// new directory that was denied the file where it was (its own rules
// move with it and count on both sides). A missing make or remove right
// is EACCES; a missing REFER or a gain, EXDEV.

// checkRefer checks linking (rename false) or renaming old, a child of
// oldDir, into newDir, over victim (nil when the name is free); exchange
// is RENAME_EXCHANGE, which moves victim the other way too. oldDir and
// newDir are on one mount.
func (dom *LandlockDomain) checkRefer(oldDir Path, old *Dentry, newDir Path, victim *Dentry, rename, exchange bool) error {
	if dom == nil {
		return nil
	}
	oldMode, err := landlockMode(old)
	if err != nil {
		return err
	}
	var req1, req2 uint64 // what the old and the new directory must allow
	var victimMode uint32
	if exchange {
		if victimMode, err = landlockMode(victim); err != nil {
			return err
		}
		req1 = landlockMake(victimMode)
	}
	req2 = landlockMake(oldMode)
	if rename {
		req1 |= landlockRemove(old)
		req2 |= landlockRemove(victim)
	}
	if oldDir.Dentry == newDir.Dentry {
		return dom.Check(newDir, req1|req2)
	}
	req1 |= unix.LANDLOCK_ACCESS_FS_REFER
	req2 |= unix.LANDLOCK_ACCESS_FS_REFER
	from, to := dom.allowedAt(oldDir), dom.allowedAt(newDir)
	ownOld := dom.allowedOn(old)
	var ownVictim layerRights
	if exchange {
		ownVictim = dom.allowedOn(victim)
	}
	missing, gains := uint64(0), false
	for i, l := range dom.layers {
		h := l.FS
		missing |= req1&h&^from[i] | req2&h&^to[i]
		gains = gains || landlockGains(h, from[i], to[i], ownOld[i], old.isDir)
		if exchange {
			gains = gains || landlockGains(h, to[i], from[i], ownVictim[i], victim.isDir)
		}
	}
	switch {
	case missing&^unix.LANDLOCK_ACCESS_FS_REFER != 0:
		return unix.EACCES
	case missing != 0 || gains:
		return unix.EXDEV
	}
	return nil
}

// landlockGains reports whether a file with the rights own of its own
// gains, moving from a directory allowing from to one allowing to, a
// right of handled: for a file that is not a directory, of the rights on
// files only.
func landlockGains(handled, from, to, own uint64, isDir bool) bool {
	if !isDir {
		handled &= landlockFileRights
	}
	return handled&to&^from&^own != 0
}

// allowedAt returns, per layer, the rights the rules on p's path allow.
func (dom *LandlockDomain) allowedAt(p Path) layerRights {
	var m layerRights
	for _, d := range landlockWalk(p) {
		dom.addAllowed(&m, d)
	}
	return m
}

// allowedOn returns, per layer, the rights the rules on d's own file
// allow.
func (dom *LandlockDomain) allowedOn(d *Dentry) layerRights {
	var m layerRights
	dom.addAllowed(&m, d)
	return m
}

// addAllowed adds to m the rights the rules on d's file allow.
func (dom *LandlockDomain) addAllowed(m *layerRights, d *Dentry) {
	if id, ok := d.landlockID(); ok {
		for _, g := range dom.rules[id] {
			if g.names(d) {
				m[g.layer] |= g.access
			}
		}
	}
}

// landlockMode returns the type bits of d's file.
func landlockMode(d *Dentry) (uint32, error) {
	st, err := AccessStat(d.inode)
	if err != nil {
		return 0, err
	}
	return st.Mode, nil
}
