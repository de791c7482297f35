package syscalls

import (
	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/internal/linuxabi"
	"github.com/moat-sandbox/moat/sentry/arch"
	"github.com/moat-sandbox/moat/sentry/fs/tmpfs"
	"github.com/moat-sandbox/moat/sentry/kernel"
	"github.com/moat-sandbox/moat/sentry/mm"
	"github.com/moat-sandbox/moat/sentry/vfs"
)

// MemfdCreate implements Linux syscall memfd_create(2); seals are fcntl's
// (sys_fd.go).
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
	impl := tmpfs.NewMemFD(t.Kernel().MemFile, name, uid, gid, flags&unix.MFD_ALLOW_SEALING != 0, flags&unix.MFD_NOEXEC_SEAL != 0)
	return installAnon(t, impl, unix.O_RDWR|linuxabi.O_LARGEFILE, flags&unix.MFD_CLOEXEC != 0)
}

// sealer is a file that takes seals: a memfd.
type sealer interface {
	Seals() uint32
	AddSeals(seals uint32, writablyMapped func(*mm.FilePages) bool) error
}

// fcntlSeals answers F_ADD_SEALS and F_GET_SEALS; a file that takes no
// seals gives EINVAL, as on Linux.
func fcntlSeals(t *kernel.Task, f *vfs.File, cmd int32, seals uint32) (uintptr, error) {
	s, ok := f.Impl().(sealer)
	if !ok {
		return 0, unix.EINVAL
	}
	if cmd == unix.F_GET_SEALS {
		return uintptr(s.Seals()), nil
	}
	if !f.Writable() {
		return 0, unix.EPERM
	}
	return 0, s.AddSeals(seals, func(p *mm.FilePages) bool {
		for _, tg := range t.Kernel().ThreadGroups() {
			for _, task := range tg.Tasks() {
				if m := task.MM(); m != nil && m.MapsWritable(p) {
					return true
				}
			}
		}
		return false
	})
}
