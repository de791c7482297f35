package vfs

import "golang.org/x/sys/unix"

// AnonPath is a path for ino outside the tree, where a magic link to a
// file with no name leads (/proc/<pid>/ns/uts: the namespace's nsfs
// inode).
func AnonPath(ino Inode) (Path, error) {
	st, err := ino.Stat()
	if err != nil {
		return Path{}, err
	}
	return Path{anonMount, &Dentry{name: "anon", inode: ino, isDir: st.Type() == unix.S_IFDIR}}, nil
}
