package vfs

import (
	"strings"

	"golang.org/x/sys/unix"
)

// Resolver resolves paths for one task: Root is its root directory ("/" and
// the limit of ".."), Start the directory relative paths begin at (its
// working directory, or a directory fd's path), Caller the task, and
// Creds the credentials every directory a name is looked up in must grant
// search permission to. The zero Creds are an unprivileged root user's:
// the kernel's own lookups say KernelCreds.
//
// Restrict holds openat2's RESOLVE_* flags, which refuse some steps of the
// walk: RESOLVE_NO_XDEV a step onto another mount (EXDEV),
// RESOLVE_NO_SYMLINKS following any symlink and RESOLVE_NO_MAGICLINKS a
// magic link (ELOOP), RESOLVE_BENEATH an absolute path, a ".." out of
// Beneath and a magic link (EXDEV). RESOLVE_IN_ROOT is the caller's to
// make: Root the directory itself, and a magic link EXDEV.
type Resolver struct {
	Root     Path
	Start    Path
	Caller   Caller
	Creds    Creds
	Restrict uint64
	Beneath  Path // with RESOLVE_BENEATH, the directory the walk stays in
}

// scoped reports RESOLVE_BENEATH or RESOLVE_IN_ROOT.
func (r Resolver) scoped() bool {
	return r.Restrict&(unix.RESOLVE_BENEATH|unix.RESOLVE_IN_ROOT) != 0
}

// jumpRoot checks a walk that goes to the root, from cur (nil at the
// start of a name): refused beneath a directory, and, with
// RESOLVE_NO_XDEV, onto another mount from where the walk is.
func (r Resolver) jumpRoot(cur *Path) error {
	if r.Restrict&unix.RESOLVE_BENEATH != 0 {
		return unix.EXDEV
	}
	if r.Restrict&unix.RESOLVE_NO_XDEV != 0 && cur != nil && cur.Mount != r.Root.Mount {
		return unix.EXDEV
	}
	return nil
}

// jumpMagic checks following a magic link from cur to p, as Linux's
// nd_jump_link.
func (r Resolver) jumpMagic(cur, p Path) error {
	switch {
	case r.Restrict&unix.RESOLVE_NO_MAGICLINKS != 0:
		return unix.ELOOP
	case r.Restrict&unix.RESOLVE_NO_XDEV != 0 && cur.Mount != p.Mount:
		return unix.EXDEV
	case r.scoped():
		return unix.EXDEV
	}
	return nil
}

// Lookup resolves name. With followFinal, a symlink in the last component
// is followed too (stat, open without O_NOFOLLOW); without, it is returned
// (lstat, readlink). A trailing slash requires a directory and follows.
func (r Resolver) Lookup(name string, followFinal bool) (Path, error) {
	if name == "" {
		return Path{}, unix.ENOENT
	}
	if len(name) >= PathMax {
		return Path{}, unix.ENAMETOOLONG
	}
	cur := r.Start
	if name[0] == '/' {
		if err := r.jumpRoot(nil); err != nil {
			return Path{}, err
		}
		cur = r.Root
	}
	if cur.Dentry == nil {
		return Path{}, unix.ENOENT
	}
	rest := name
	links := 0
	for {
		rest = strings.TrimLeft(rest, "/")
		if rest == "" {
			// Nothing left: a path of slashes, or one ending in "/".
			return cur, nil
		}
		comp := rest
		next := ""
		if i := strings.IndexByte(rest, '/'); i >= 0 {
			comp, next = rest[:i], rest[i:]
		}
		last := strings.TrimLeft(next, "/") == ""
		if !cur.Dentry.isDir {
			return Path{}, unix.ENOTDIR
		}
		// Linux checks search permission before every component, "." and
		// ".." included.
		if err := r.Creds.maySearch(cur.Dentry); err != nil {
			return Path{}, err
		}
		switch comp {
		case ".":
			rest = next
			continue
		case "..":
			if r.Restrict&unix.RESOLVE_BENEATH != 0 && cur == r.Beneath {
				return Path{}, unix.EXDEV
			}
			up := parentOf(cur, r.Root)
			if r.Restrict&unix.RESOLVE_NO_XDEV != 0 && up.Mount != cur.Mount {
				return Path{}, unix.EXDEV
			}
			cur, rest = up, next
			continue
		}
		if len(comp) > NameMax {
			return Path{}, unix.ENAMETOOLONG
		}
		c, err := cur.Dentry.child(comp)
		if err != nil {
			return Path{}, err
		}
		child := crossMounts(Path{cur.Mount, c})
		if r.Restrict&unix.RESOLVE_NO_XDEV != 0 && child.Mount != cur.Mount {
			return Path{}, unix.EXDEV
		}
		if child.Dentry.isLink && (!last || followFinal || next != "") {
			links++
			if links > MaxSymlinks || r.Restrict&unix.RESOLVE_NO_SYMLINKS != 0 {
				return Path{}, unix.ELOOP
			}
			if m, ok := child.Dentry.inode.(MagicLink); ok {
				if p, magic, err := m.Jump(r.Caller); err != nil {
					return Path{}, err
				} else if magic {
					if err := r.jumpMagic(cur, p); err != nil {
						return Path{}, err
					}
					cur, rest = p, next
					if next != "" && !p.Dentry.isDir {
						return Path{}, unix.ENOTDIR
					}
					continue
				}
			}
			target, err := Readlink(child.Dentry.inode, r.Caller)
			if err != nil {
				return Path{}, err
			}
			if target == "" {
				return Path{}, unix.ENOENT
			}
			if target[0] == '/' {
				if err := r.jumpRoot(&cur); err != nil {
					return Path{}, err
				}
				cur = r.Root
			}
			rest = target + next
			if len(rest) >= PathMax {
				return Path{}, unix.ENAMETOOLONG
			}
			continue
		}
		if next != "" && !child.Dentry.isDir {
			return Path{}, unix.ENOTDIR
		}
		cur, rest = child, next
	}
}
