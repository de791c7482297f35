package syscalls

import (
	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/internal/linuxabi"
	"github.com/moat-sandbox/moat/sentry/arch"
	"github.com/moat-sandbox/moat/sentry/fs/tmpfs"
	"github.com/moat-sandbox/moat/sentry/kernel"
)

// MemfdCreate implements Linux syscall memfd_create(2). Seals are not
// offered: F_ADD_SEALS answers EINVAL.
func MemfdCreate(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	flags := a.Uint(1)
	if flags&^(unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING|unix.MFD_HUGETLB|unix.MFD_NOEXEC_SEAL|unix.MFD_EXEC) != 0 ||
		flags&(unix.MFD_NOEXEC_SEAL|unix.MFD_EXEC) == unix.MFD_NOEXEC_SEAL|unix.MFD_EXEC {
		return 0, unix.EINVAL
	}
	if flags&unix.MFD_HUGETLB != 0 {
		return 0, unix.EINVAL // no huge pages in the sandbox
	}
	name, err := t.CopyInString(a.Ptr(0), linuxabi.MFD_NAME_MAX_LEN+1)
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
	return installAnon(t, tmpfs.NewMemFD(t.Kernel().MemFile, name, uid, gid), unix.O_RDWR|linuxabi.O_LARGEFILE, flags&unix.MFD_CLOEXEC != 0)
}
