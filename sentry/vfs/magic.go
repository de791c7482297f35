package vfs

import "golang.org/x/sys/unix"

// Magic links: /proc/<pid>/fd/N names the file the descriptor holds, not a
// path: following it reaches that very file, whether it still has a name
// (a deleted file), or never had one in the tree (a pipe, the sandbox's
// stdio), as Linux's proc_fd_link does. Opening it opens the file anew: a
// new open file description with the access the open asks for.

// MagicLink is implemented by symlinks that resolve to a file rather than
// a path. Jump returns false for a link that is an ordinary one after all.
type MagicLink interface {
	Jump(c Caller) (Path, bool, error)
}

// Reopener is implemented by open files with no name in the tree that can
// be opened again through a magic link: the inode an open of it uses
// (ContextOpener). Other such files (an eventfd, a socket) give ENXIO.
type Reopener interface {
	Reopen() (Inode, error)
}

// ContextOpener is implemented by inodes whose open needs the opener
// (a pipe's new end may wait for its other end).
type ContextOpener interface {
	OpenContext(c Context, flags int) (FileImpl, error)
}

// anonMount holds the files reached through magic links that have no
// place in the tree.
var anonMount = NewRootMount(NewRoot(emptyDir{}), "anon_inodefs", 0)

// FilePath is where a magic link to f leads.
func FilePath(f *File) (Path, error) {
	if f.path.Dentry != nil {
		return f.path, nil
	}
	r, ok := f.impl.(Reopener)
	if !ok {
		return Path{}, unix.ENXIO
	}
	ino, err := r.Reopen()
	if err != nil {
		return Path{}, err
	}
	st, err := ino.Stat()
	if err != nil {
		return Path{}, err
	}
	return Path{anonMount, &Dentry{name: "anon", inode: ino, isDir: st.Type() == unix.S_IFDIR}}, nil
}
