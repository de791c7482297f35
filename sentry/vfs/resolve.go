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
type Resolver struct {
	Root   Path
	Start  Path
	Caller Caller
	Creds  Creds
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
			cur, rest = parentOf(cur, r.Root), next
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
		if child.Dentry.isLink && (!last || followFinal || next != "") {
			links++
			if links > MaxSymlinks {
				return Path{}, unix.ELOOP
			}
			if m, ok := child.Dentry.inode.(MagicLink); ok {
				if p, magic, err := m.Jump(r.Caller); err != nil {
					return Path{}, err
				} else if magic {
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
