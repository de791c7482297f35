package confine

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// EnterEmptyRoot makes the root and working directory of the calling
// process (in a mount namespace of its own) an empty, read-only tmpfs, and
// detaches every other mount: afterwards no path names anything of the
// host. The tmpfs is mounted over /proc, which every host has and the
// process needs no more; the mount stays in the process's namespace.
func EnterEmptyRoot() error {
	return enterRoot("/proc", func() error {
		// An empty root: no inodes to spare, nothing any mode lets in.
		return unix.Mount("moat-empty", "/proc", "tmpfs", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC,
			"mode=0,size=4k,nr_inodes=1")
	}, true)
}

// enterRoot makes dir, once mount has put a file system there, the root:
// no change of the tree this namespace makes reaches the host's (every
// mount becomes private), dir becomes / (pivot_root(".", ".") stacks the
// old root on the new one, and the old root is then detached), and with
// readonly / becomes read-only, nosuid, nodev and noexec.
func enterRoot(dir string, mount func() error, readonly bool) error {
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("confine: make the mounts private: %w", err)
	}
	if err := mount(); err != nil {
		return fmt.Errorf("confine: mount the new root at %s: %w", dir, err)
	}
	if err := unix.Chdir(dir); err != nil {
		return fmt.Errorf("confine: %w", err)
	}
	if err := unix.PivotRoot(".", "."); err != nil {
		return fmt.Errorf("confine: pivot_root to %s: %w", dir, err)
	}
	if err := unix.Unmount(".", unix.MNT_DETACH); err != nil {
		return fmt.Errorf("confine: detach the old root: %w", err)
	}
	if err := unix.Chdir("/"); err != nil {
		return fmt.Errorf("confine: %w", err)
	}
	if readonly {
		flags := uintptr(unix.MS_REMOUNT | unix.MS_BIND | unix.MS_RDONLY | unix.MS_NOSUID | unix.MS_NODEV | unix.MS_NOEXEC)
		if err := unix.Mount("", "/", "", flags, ""); err != nil {
			return fmt.Errorf("confine: make the root read-only: %w", err)
		}
	}
	return nil
}
