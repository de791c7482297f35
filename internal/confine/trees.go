package confine

import (
	"fmt"
	"strconv"

	"golang.org/x/sys/unix"
)

// Tree is a host tree (a directory or a single file) the gofer serves.
type Tree struct {
	Path     string
	ReadOnly bool
}

// stageDir is where the gofer's new root is made: a directory every host
// has, which the gofer needs no more.
const stageDir = "/proc"

// EnterTrees makes the trees the only things the calling process (in a
// mount namespace of its own) can name, and returns each one's path in its
// new root: each tree is cloned with its submounts (open_tree) while its
// host path still resolves, made nosuid and nodev, and read-only if it is
// served read-only, so that the host kernel refuses a write even if the
// gofer were talked into one; then they are attached as /0, /1, ... of an
// empty tmpfs that becomes the root, read-only itself. A bind source
// outside the rootfs is just another tree: nothing of the host between
// them stays nameable.
func EnterTrees(trees []Tree) ([]string, error) {
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return nil, fmt.Errorf("confine: make the mounts private: %w", err)
	}
	fds := make([]int, len(trees))
	dirs := make([]bool, len(trees))
	defer func() {
		for _, fd := range fds {
			if fd > 0 {
				unix.Close(fd)
			}
		}
	}()
	for i, t := range trees {
		fd, err := unix.OpenTree(unix.AT_FDCWD, t.Path, unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_RECURSIVE)
		if err != nil {
			return nil, fmt.Errorf("confine: clone the mount of %s: %w", t.Path, err)
		}
		fds[i] = fd
		attr := unix.MountAttr{Attr_set: unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NODEV}
		if t.ReadOnly {
			attr.Attr_set |= unix.MOUNT_ATTR_RDONLY
		}
		if err := unix.MountSetattr(fd, "", unix.AT_EMPTY_PATH|unix.AT_RECURSIVE, &attr); err != nil {
			return nil, fmt.Errorf("confine: restrict the mount of %s: %w", t.Path, err)
		}
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil {
			return nil, fmt.Errorf("confine: %s: %w", t.Path, err)
		}
		dirs[i] = st.Mode&unix.S_IFMT == unix.S_IFDIR
	}
	paths := make([]string, len(trees))
	attach := func() error {
		if err := unix.Mount("moat-trees", stageDir, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC,
			"mode=0555,size=64k"); err != nil {
			return err
		}
		for i, fd := range fds {
			name := strconv.Itoa(i)
			point := stageDir + "/" + name
			var err error
			if dirs[i] {
				err = unix.Mkdir(point, 0o555)
			} else {
				var f int
				if f, err = unix.Open(point, unix.O_CREAT|unix.O_EXCL|unix.O_RDONLY|unix.O_CLOEXEC, 0o444); err == nil {
					unix.Close(f)
				}
			}
			if err == nil {
				err = unix.MoveMount(fd, "", unix.AT_FDCWD, point, unix.MOVE_MOUNT_F_EMPTY_PATH)
			}
			if err != nil {
				return fmt.Errorf("attach %s: %w", trees[i].Path, err)
			}
			paths[i] = "/" + name
		}
		return nil
	}
	if err := enterRoot(stageDir, attach, true); err != nil {
		return nil, err
	}
	return paths, nil
}
