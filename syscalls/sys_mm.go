package syscalls

import (
	"io"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/platform"
	"github.com/moat-sandbox/moat/sentry/arch"
	"github.com/moat-sandbox/moat/sentry/kernel"
	"github.com/moat-sandbox/moat/sentry/mm"
	"github.com/moat-sandbox/moat/sentry/vfs"
)

// mapKnown are the flags MAP_SHARED_VALIDATE accepts.
const mapKnown = unix.MAP_SHARED | unix.MAP_PRIVATE | unix.MAP_FIXED | unix.MAP_ANONYMOUS | unix.MAP_32BIT |
	unix.MAP_GROWSDOWN | unix.MAP_DENYWRITE | unix.MAP_EXECUTABLE | unix.MAP_LOCKED | unix.MAP_NORESERVE |
	unix.MAP_POPULATE | unix.MAP_NONBLOCK | unix.MAP_STACK | unix.MAP_HUGETLB | unix.MAP_SYNC |
	unix.MAP_FIXED_NOREPLACE

// ZeroMappable is implemented by files whose mappings are anonymous memory
// (/dev/zero).
type ZeroMappable interface{ MapsAsAnonymous() bool }

// Mmap implements Linux syscall mmap(2). File contents are copied into the
// mapping when it is made: MAP_SHARED file mappings do not write back.
func Mmap(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	addr, length, prot, flags, fd, off := a.Ptr(0), a.Ptr(1), platform.Prot(a.Uint(2)), int(a.Int(3)), a.Int(4), a[5]
	typ := flags & unix.MAP_TYPE
	if typ != unix.MAP_SHARED && typ != unix.MAP_PRIVATE && typ != unix.MAP_SHARED_VALIDATE {
		return 0, unix.EINVAL
	}
	if typ == unix.MAP_SHARED_VALIDATE && flags&^mapKnown != 0 {
		return 0, unix.EOPNOTSUPP
	}
	if off%mm.PageSize != 0 {
		return 0, unix.EINVAL
	}
	if off+uint64(length) < off {
		return 0, unix.EOVERFLOW
	}
	o := mm.MMapOpts{Addr: addr, Length: length, Prot: prot & (platform.ProtRead | platform.ProtWrite | platform.ProtExec), Fixed: flags&unix.MAP_FIXED != 0,
		NoReplace: flags&unix.MAP_FIXED_NOREPLACE != 0, Shared: typ != unix.MAP_PRIVATE, Low2G: flags&unix.MAP_32BIT != 0,
		NoReserve: flags&unix.MAP_NORESERVE != 0,
		Populate:  flags&(unix.MAP_POPULATE|unix.MAP_NONBLOCK) == unix.MAP_POPULATE, Locked: flags&unix.MAP_LOCKED != 0}
	if flags&unix.MAP_ANONYMOUS == 0 {
		f, err := t.FDs().Get(fd)
		if err != nil {
			return 0, err
		}
		defer f.DecRef()
		root, _ := t.FS().Get()
		if err := fileMapping(f, root, &o, off); err != nil {
			return 0, err
		}
	}
	if o.Name == "" && flags&unix.MAP_STACK != 0 {
		o.Name = "[stack]"
	}
	return retErr(t.MM().MMap(o))
}

// fileMapping fills in the file side of a mapping request, with mmap's
// permission rules.
func fileMapping(f *vfs.File, root vfs.Path, o *mm.MMapOpts, off uint64) error {
	if f.Flags()&unix.O_PATH != 0 {
		return unix.EBADF
	}
	if z, ok := f.Impl().(ZeroMappable); ok && z.MapsAsAnonymous() {
		if !o.Shared {
			o.Name = vfs.ShownName(f.Path(), root) // Linux keeps the file of a private mapping of /dev/zero
		}
		return nil
	}
	src, ok := f.Impl().(io.ReaderAt)
	if !ok || f.Path().Dentry.IsDir() {
		return unix.ENODEV
	}
	if !f.Readable() {
		return unix.EACCES
	}
	if o.Shared {
		if o.Prot&platform.ProtWrite != 0 && (!f.Writable() || f.Flags()&unix.O_APPEND != 0) {
			return unix.EACCES
		}
		if !f.Writable() {
			o.MaxProt = platform.ProtRead | platform.ProtExec
		}
	}
	if m := f.Path().Mount; m != nil && m.Flags&unix.MS_NOEXEC != 0 {
		// A file on a noexec mount never runs: not mapped, nor made,
		// executable.
		if o.Prot&platform.ProtExec != 0 {
			return unix.EPERM
		}
		if o.MaxProt == 0 {
			o.MaxProt = platform.ProtRead | platform.ProtWrite | platform.ProtExec
		}
		o.MaxProt &^= platform.ProtExec
	}
	o.File, o.Offset = src, off
	if s, ok := f.Impl().(interface{ MapsWritable() bool }); ok && o.Shared && !s.MapsWritable() {
		// Sealed against writes: no writable shared mapping, now or later.
		if o.Prot&platform.ProtWrite != 0 {
			return unix.EPERM
		}
		o.MaxProt = platform.ProtRead | platform.ProtExec
	}
	if pf, ok := f.Impl().(mm.PagesFile); ok {
		o.Pages = pf.FilePages()
	}
	if c, ok := f.Impl().(mm.Cacheable); ok && o.Pages == nil && (!o.Shared || o.MaxProt&platform.ProtWrite == 0) {
		o.Cache = c.FileCache()
	}
	o.Name = vfs.ShownName(f.Path(), root)
	return nil
}

// Munmap implements Linux syscall munmap(2).
func Munmap(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	return 0, t.MM().Munmap(a.Ptr(0), a.Ptr(1))
}

// Mprotect implements Linux syscall mprotect(2).
func Mprotect(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	return 0, t.MM().Mprotect(a.Ptr(0), a.Ptr(1), platform.Prot(a.Uint(2)))
}

// Brk implements Linux syscall brk(2).
func Brk(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	return t.MM().Brk(a.Ptr(0)), nil
}

// Mremap implements Linux syscall mremap(2).
func Mremap(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	return retErr(t.MM().Mremap(a.Ptr(0), a.Ptr(1), a.Ptr(2), int(a.Int(3)), a.Ptr(4)))
}

// Madvise implements Linux syscall madvise(2): MADV_DONTNEED resets pages,
// MADV_POPULATE_READ and MADV_POPULATE_WRITE fault them in, the other
// advice is valid and needs nothing done.
func Madvise(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	return 0, madvise(t.MM(), a.Ptr(0), a.Ptr(1), a.Int(2))
}

// madvise gives advice on [addr, addr+length) of m. A hint needs nothing
// done, but its range must be mapped (ENOMEM), as Linux's walk of the
// range finds.
func madvise(m *mm.MemoryManager, addr, length uintptr, advice int32) error {
	if addr%mm.PageSize != 0 || addr+length < addr || addr+length > ^uintptr(0)-mm.PageSize {
		return unix.EINVAL
	}
	switch advice {
	case unix.MADV_DONTNEED:
		return m.DontNeed(addr, length)
	case unix.MADV_POPULATE_READ, unix.MADV_POPULATE_WRITE:
		return m.Populate(addr, length, advice == unix.MADV_POPULATE_WRITE)
	case unix.MADV_NORMAL, unix.MADV_RANDOM, unix.MADV_SEQUENTIAL, unix.MADV_WILLNEED, unix.MADV_FREE,
		unix.MADV_DONTFORK, unix.MADV_DOFORK, unix.MADV_MERGEABLE, unix.MADV_UNMERGEABLE,
		unix.MADV_HUGEPAGE, unix.MADV_NOHUGEPAGE, unix.MADV_DONTDUMP, unix.MADV_DODUMP,
		unix.MADV_COLD, unix.MADV_PAGEOUT, unix.MADV_WIPEONFORK, unix.MADV_KEEPONFORK:
		if length != 0 && !m.IsMappedRange(addr, length) {
			return unix.ENOMEM
		}
		return nil
	}
	return unix.EINVAL
}

// Msync implements Linux syscall msync(2). Mappings hold copies, so there
// is nothing to write back.
func Msync(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	addr, length, flags := a.Ptr(0), a.Ptr(1), int(a.Int(2))
	if addr%mm.PageSize != 0 || flags&^(unix.MS_ASYNC|unix.MS_SYNC|unix.MS_INVALIDATE) != 0 ||
		flags&(unix.MS_ASYNC|unix.MS_SYNC) == unix.MS_ASYNC|unix.MS_SYNC {
		return 0, unix.EINVAL
	}
	if !t.MM().IsMappedRange(addr, length) {
		return 0, unix.ENOMEM
	}
	return 0, t.MM().Msync(addr, length)
}

// Mlock implements Linux syscall mlock(2). Guest memory is never swapped
// out by the sentry, so locking marks the mappings for /proc.
func Mlock(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	return 0, t.MM().Mlock(a.Ptr(0), a.Ptr(1), true, false)
}

// Mlock2 implements Linux syscall mlock2(2): mlock, or with MLOCK_ONFAULT
// a lock that leaves the pages to be made resident as they are touched.
func Mlock2(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	flags := a.Uint(2)
	if flags&^unix.MLOCK_ONFAULT != 0 {
		return 0, unix.EINVAL
	}
	return 0, t.MM().Mlock(a.Ptr(0), a.Ptr(1), true, flags&unix.MLOCK_ONFAULT != 0)
}

// Mseal implements Linux syscall mseal(2), which takes no flags yet.
func Mseal(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	if a[2] != 0 {
		return 0, unix.EINVAL
	}
	return 0, t.MM().Mseal(a.Ptr(0), a.Ptr(1))
}

// Munlock implements Linux syscall munlock(2).
func Munlock(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	return 0, t.MM().Mlock(a.Ptr(0), a.Ptr(1), false, false)
}

// Mlockall implements Linux syscall mlockall(2).
func Mlockall(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	flags := a.Int(0)
	if flags&(unix.MCL_CURRENT|unix.MCL_FUTURE) == 0 || flags&^(unix.MCL_CURRENT|unix.MCL_FUTURE|unix.MCL_ONFAULT) != 0 {
		return 0, unix.EINVAL
	}
	t.MM().MlockAll(flags&unix.MCL_CURRENT != 0, flags&unix.MCL_FUTURE != 0)
	return 0, nil
}

// Munlockall implements Linux syscall munlockall(2).
func Munlockall(t *kernel.Task, _ *arch.SyscallArgs) (uintptr, error) {
	t.MM().MunlockAll()
	return 0, nil
}

// Mincore implements Linux syscall mincore(2).
func Mincore(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	addr, length, vec := a.Ptr(0), a.Ptr(1), a.Ptr(2)
	if addr%mm.PageSize != 0 {
		return 0, unix.EINVAL
	}
	if addr+length < addr || length > 1<<40 {
		return 0, unix.ENOMEM
	}
	// A step at a time: a terabyte's vector is 256 MiB, which the sentry
	// need not hold at once (a lazily backed mapping may be that large).
	for done := uintptr(0); done < length; done += mincoreStep {
		res, err := t.MM().Residency(addr+done, min(length-done, mincoreStep))
		if err != nil {
			return 0, err
		}
		if _, err := t.CopyOut(vec+done/mm.PageSize, res); err != nil {
			return 0, err
		}
	}
	return 0, nil
}

// mincoreStep is how much address space Mincore reports on at once: a
// 64 KiB vector.
const mincoreStep = (1 << 16) * mm.PageSize

// RemapFilePages implements Linux syscall remap_file_pages(2), which
// Linux has emulated with mmap since 4.0 (mm/mmap.c): prot must be 0,
// start and size are rounded down to pages, an empty or wrapping range or
// page offset is EINVAL, and the range is mapped again from page pgoff of
// its shared file mapping. It answers 0.
func RemapFilePages(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	start, size, prot, pgoff := a.Ptr(0), a.Ptr(1), a[2], a[3]
	if prot != 0 {
		return 0, unix.EINVAL
	}
	start &^= mm.PageSize - 1
	size &^= mm.PageSize - 1
	if start+size <= start || pgoff+uint64(size/mm.PageSize) < pgoff {
		return 0, unix.EINVAL
	}
	return 0, t.MM().RemapFilePages(start, size, pgoff)
}
