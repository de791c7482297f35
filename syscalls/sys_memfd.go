package syscalls

import (
	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/sentry/arch"
	"github.com/moat-sandbox/moat/sentry/fs/tmpfs"
	"github.com/moat-sandbox/moat/sentry/kernel"
)

// memfd_create flags.
const (
	mfdCloexec      = 0x1
	mfdAllowSealing = 0x2
	mfdHugetlb      = 0x4
	mfdNoexecSeal   = 0x8
	mfdExec         = 0x10
	memfdNameMax    = 249 // NAME_MAX minus the "memfd:" prefix
)

// MemfdCreate implements Linux syscall memfd_create(2). Seals are not
// offered: F_ADD_SEALS answers EINVAL.
func MemfdCreate(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	flags := a.Uint(1)
	if flags&^(mfdCloexec|mfdAllowSealing|mfdHugetlb|mfdNoexecSeal|mfdExec) != 0 ||
		flags&(mfdNoexecSeal|mfdExec) == mfdNoexecSeal|mfdExec {
		return 0, unix.EINVAL
	}
	if flags&mfdHugetlb != 0 {
		return 0, unix.EINVAL // no huge pages in the sandbox
	}
	name, err := t.CopyInString(a.Ptr(0), memfdNameMax+1)
	if err == unix.ENAMETOOLONG {
		return 0, unix.EINVAL
	}
	if err != nil {
		return 0, err
	}
	c := t.Creds()
	c.Lock()
	uid, gid := c.FSUID, c.FSGID
	c.Unlock()
	return installAnon(t, tmpfs.NewMemFD(name, uid, gid), unix.O_RDWR|oLargefile, flags&mfdCloexec != 0)
}
