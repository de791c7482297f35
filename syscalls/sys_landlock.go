package syscalls

import (
	"encoding/binary"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/sentry/arch"
	"github.com/moat-sandbox/moat/sentry/kernel"
	"github.com/moat-sandbox/moat/sentry/vfs"
)

// Landlock (landlock(7)): the three calls that build a ruleset and
// restrict the caller with it; vfs enforces the domain (vfs/landlock.go).
// moat implements ABI 3: the file-system rights up to TRUNCATE. Network
// rights (ABI 4), IOCTL_DEV (5), scoping (6) and the audit flags (7) are
// not implemented, so the calls refuse them as a Linux 6.2 kernel does.

// landlockABI is the Landlock ABI version moat implements.
const landlockABI = 3

// landlockErrata are the Landlock errata whose fixed behaviour moat has,
// of those that apply to its ABI: erratum 3 (ABI 1), rights from a
// directory moved out of a bind mount's tree (vfs's landlockWalk).
const landlockErrata = 1 << 2

// sizeofRulesetAttr is struct landlock_ruleset_attr as ABI 3 knows it:
// handled_access_fs alone. A larger struct is taken if the rest is zero.
const sizeofRulesetAttr = 8

// sizeofPathBeneathAttr is struct landlock_path_beneath_attr (packed): a
// u64 allowed_access and an s32 parent_fd.
const sizeofPathBeneathAttr = 12

// LandlockCreateRuleset implements Linux syscall landlock_create_ruleset(2):
// the version and errata queries, or a ruleset fd (O_RDWR, close-on-exec).
func LandlockCreateRuleset(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	attr, size, flags := a.Ptr(0), a[1], a.Uint(2)
	if flags != 0 {
		if attr != 0 || size != 0 {
			return 0, unix.EINVAL
		}
		switch flags {
		case unix.LANDLOCK_CREATE_RULESET_VERSION:
			return landlockABI, nil
		case unix.LANDLOCK_CREATE_RULESET_ERRATA:
			return landlockErrata, nil
		}
		return 0, unix.EINVAL
	}
	if attr == 0 {
		return 0, unix.EFAULT
	}
	b, err := copyInExtensible(t, attr, uint64(size), sizeofRulesetAttr)
	if err != nil {
		return 0, err
	}
	handled := binary.LittleEndian.Uint64(b)
	if handled&^vfs.LandlockRights != 0 {
		return 0, unix.EINVAL
	}
	if handled == 0 {
		return 0, unix.ENOMSG
	}
	return installAnon(t, &rulesetFile{rs: vfs.NewLandlockRuleset(handled)}, unix.O_RDWR, true)
}

// LandlockAddRule implements Linux syscall landlock_add_rule(2): a
// path-beneath rule, the only type ABI 3 has.
func LandlockAddRule(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	if a.Uint(3) != 0 {
		return 0, unix.EINVAL
	}
	rs, err := rulesetAt(t, a.Int(0), unix.O_WRONLY)
	if err != nil {
		return 0, err
	}
	if a.Int(1) != unix.LANDLOCK_RULE_PATH_BENEATH {
		return 0, unix.EINVAL
	}
	var b [sizeofPathBeneathAttr]byte
	if _, err := t.CopyIn(a.Ptr(2), b[:]); err != nil {
		return 0, err
	}
	access := binary.LittleEndian.Uint64(b[:])
	parentFD := int32(binary.LittleEndian.Uint32(b[8:]))
	if access == 0 {
		return 0, unix.ENOMSG // a rule that allows nothing
	}
	if access&^rs.Handled() != 0 {
		return 0, unix.EINVAL
	}
	// Any open file names a rule's file, O_PATH ones included.
	f, err := t.FDs().Get(parentFD)
	if err != nil {
		return 0, err
	}
	defer f.DecRef()
	if _, ok := f.Impl().(*rulesetFile); ok {
		return 0, unix.EBADFD
	}
	return 0, rs.AddRule(f.Path(), access)
}

// LandlockRestrictSelf implements Linux syscall landlock_restrict_self(2):
// the caller (this thread alone) gets the ruleset as a new layer of its
// domain, which its children and programs it runs keep. It needs
// no_new_privs or CAP_SYS_ADMIN (EPERM), as seccomp filters do.
func LandlockRestrictSelf(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	if !t.Prctl().NoNewPrivs && !t.HasCap(unix.CAP_SYS_ADMIN) {
		return 0, unix.EPERM
	}
	if a.Uint(1) != 0 {
		return 0, unix.EINVAL
	}
	rs, err := rulesetAt(t, a.Int(0), unix.O_RDONLY)
	if err != nil {
		return 0, err
	}
	return 0, t.LandlockRestrict(rs)
}

// rulesetAt returns the ruleset open at fd, which must be open for acc
// (O_RDONLY: reading, O_WRONLY: writing; EPERM otherwise): EBADF for no
// fd or an O_PATH one, EBADFD for another kind of file.
func rulesetAt(t *kernel.Task, fd int32, acc int) (*vfs.LandlockRuleset, error) {
	f, err := fileAt(t, fd)
	if err != nil {
		return nil, err
	}
	defer f.DecRef()
	r, ok := f.Impl().(*rulesetFile)
	if !ok {
		return nil, unix.EBADFD
	}
	mode := f.Flags() & unix.O_ACCMODE
	if acc == unix.O_RDONLY && mode == unix.O_WRONLY || acc == unix.O_WRONLY && mode == unix.O_RDONLY {
		return nil, unix.EPERM
	}
	return r.rs, nil
}

// rulesetFile is a Landlock ruleset's fd: it is neither read nor written
// (EINVAL), and cannot be opened again through /proc (ENXIO).
type rulesetFile struct{ rs *vfs.LandlockRuleset }

func (*rulesetFile) Read(*vfs.IOSeq, int64) (int, error)  { return 0, unix.EINVAL }
func (*rulesetFile) Write(*vfs.IOSeq, int64) (int, error) { return 0, unix.EINVAL }
func (*rulesetFile) Stat() (vfs.Stat, error) {
	return vfs.Stat{Mode: 0o600, Nlink: 1, Blksize: 4096}, nil
}
func (*rulesetFile) Ioctl(uint32, uintptr, vfs.IoctlIO) (uintptr, error) {
	return 0, unix.ENOTTY
}
func (*rulesetFile) Release() {}

// Name is what /proc/<pid>/fd shows.
func (*rulesetFile) Name() string { return "anon_inode:[landlock-ruleset]" }
