package vfs

import (
	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/internal/linuxabi"
)

// LandlockIoctl checks ioctl(cmd) on f against the rights its opener's
// Landlock domain gave it (ABI 5): on a device opened without IOCTL_DEV,
// EACCES, but for the requests Linux always lets through (those its
// do_vfs_ioctl answers itself, which fcntl or another file could do
// as well).
func (f *File) LandlockIoctl(cmd uint32) error {
	if f.landlockDenied&unix.LANDLOCK_ACCESS_FS_IOCTL_DEV == 0 {
		return nil
	}
	switch cmd {
	case linuxabi.FIOCLEX, linuxabi.FIONCLEX, linuxabi.FIONBIO, linuxabi.FIOASYNC, linuxabi.FIOQSIZE,
		linuxabi.FIFREEZE, linuxabi.FITHAW, linuxabi.FS_IOC_FIEMAP, linuxabi.FIGETBSZ,
		unix.FICLONE, unix.FICLONERANGE, unix.FIDEDUPERANGE,
		linuxabi.FS_IOC_GETFSUUID, linuxabi.FS_IOC_GETFSSYSFSPATH:
		return nil
	}
	return unix.EACCES
}
