package syscalls

import (
	"encoding/binary"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/internal/linuxabi"
	"github.com/moat-sandbox/moat/sentry/arch"
	"github.com/moat-sandbox/moat/sentry/kernel"
	"github.com/moat-sandbox/moat/sentry/net/socket"
	"github.com/moat-sandbox/moat/sentry/vfs"
)

// Landlock (landlock(7)): the three calls that build a ruleset and
// restrict the caller with it; vfs enforces the domain on files
// (vfs/landlock.go), bind and connect on TCP ports (landlockSocket
// below), and the signal and unix socket calls its scopes. moat
// implements ABI 7: every file-system right, the TCP rights, both scopes,
// and restrict_self's audit flags, which are taken and change nothing, as
// on a Linux built without audit: the sandbox has no audit log.

// landlockABI is the Landlock ABI version moat implements.
const landlockABI = 7

// landlockErrata are the Landlock errata whose fixed behaviour moat has:
// erratum 1 (ABI 4), only TCP sockets restricted (not other stream
// protocols); erratum 2 (ABI 6), a thread always signals its own
// process's threads (kernel.Task.MaySignal); erratum 3 (ABI 1), rights
// from a directory moved out of a bind mount's tree (vfs's landlockWalk).
const landlockErrata = 1<<0 | 1<<1 | 1<<2

// sizeofRulesetAttr is struct landlock_ruleset_attr as ABI 7 knows it:
// handled_access_fs, handled_access_net and scoped. A larger struct is
// taken if the rest is zero.
const sizeofRulesetAttr = 24

// restrictSelfFlags are landlock_restrict_self's flags (ABI 7): LOG_SAME_EXEC_OFF,
// LOG_NEW_EXEC_ON and LOG_SUBDOMAINS_OFF, which only say what the audit
// log records.
const restrictSelfFlags = unix.LANDLOCK_RESTRICT_SELF_LOG_SAME_EXEC_OFF | unix.LANDLOCK_RESTRICT_SELF_LOG_NEW_EXEC_ON |
	unix.LANDLOCK_RESTRICT_SELF_LOG_SUBDOMAINS_OFF

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
	// handled_access_fs is all a caller must give: older ABIs' structs
	// are shorter.
	b, err := copyInExtensibleMin(t, attr, uint64(size), 8, sizeofRulesetAttr)
	if err != nil {
		return 0, err
	}
	le := binary.LittleEndian
	h := vfs.LandlockHandled{FS: le.Uint64(b), Net: le.Uint64(b[8:]), Scoped: le.Uint64(b[16:])}
	if h.FS&^vfs.LandlockRights != 0 || h.Net&^vfs.LandlockNetRights != 0 || h.Scoped&^vfs.LandlockScopes != 0 {
		return 0, unix.EINVAL
	}
	if h == (vfs.LandlockHandled{}) {
		return 0, unix.ENOMSG
	}
	return installAnon(t, &rulesetFile{rs: vfs.NewLandlockRuleset(h)}, unix.O_RDWR, true)
}

// sizeofNetPortAttr is struct landlock_net_port_attr: a u64
// allowed_access and a u64 port.
const sizeofNetPortAttr = 16

// LandlockAddRule implements Linux syscall landlock_add_rule(2): a
// path-beneath rule or a TCP port rule.
func LandlockAddRule(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	if a.Uint(3) != 0 {
		return 0, unix.EINVAL
	}
	rs, err := rulesetAt(t, a.Int(0), unix.O_WRONLY)
	if err != nil {
		return 0, err
	}
	switch a.Int(1) {
	case unix.LANDLOCK_RULE_PATH_BENEATH:
		return 0, addPathRule(t, rs, a.Ptr(2))
	case linuxabi.LANDLOCK_RULE_NET_PORT:
		return 0, addPortRule(t, rs, a.Ptr(2))
	}
	return 0, unix.EINVAL
}

// addPortRule reads a struct landlock_net_port_attr at addr into rs.
func addPortRule(t *kernel.Task, rs *vfs.LandlockRuleset, addr uintptr) error {
	var b [sizeofNetPortAttr]byte
	if _, err := t.CopyIn(addr, b[:]); err != nil {
		return err
	}
	access := binary.LittleEndian.Uint64(b[:])
	if access == 0 {
		return unix.ENOMSG // a rule that allows nothing
	}
	return rs.AddPortRule(binary.LittleEndian.Uint64(b[8:]), access)
}

// addPathRule reads a struct landlock_path_beneath_attr at addr into rs.
func addPathRule(t *kernel.Task, rs *vfs.LandlockRuleset, addr uintptr) error {
	var b [sizeofPathBeneathAttr]byte
	if _, err := t.CopyIn(addr, b[:]); err != nil {
		return err
	}
	access := binary.LittleEndian.Uint64(b[:])
	parentFD := int32(binary.LittleEndian.Uint32(b[8:]))
	if access == 0 {
		return unix.ENOMSG // a rule that allows nothing
	}
	if access&^rs.Handled().FS != 0 {
		return unix.EINVAL
	}
	// Any open file names a rule's file, O_PATH ones included.
	f, err := t.FDs().Get(parentFD)
	if err != nil {
		return err
	}
	defer f.DecRef()
	if _, ok := f.Impl().(*rulesetFile); ok {
		return unix.EBADFD
	}
	return rs.AddRule(f.Path(), access)
}

// LandlockRestrictSelf implements Linux syscall landlock_restrict_self(2):
// the caller (this thread alone) gets the ruleset as a new layer of its
// domain, which its children and programs it runs keep. It needs
// no_new_privs or CAP_SYS_ADMIN (EPERM), as seccomp filters do. The audit
// flags are taken; LOG_SUBDOMAINS_OFF alone may come with no ruleset (fd
// -1), which then changes nothing else.
func LandlockRestrictSelf(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	if !t.Prctl().NoNewPrivs && !t.HasCap(unix.CAP_SYS_ADMIN) {
		return 0, unix.EPERM
	}
	fd, flags := a.Int(0), a.Uint(1)
	if flags&^restrictSelfFlags != 0 {
		return 0, unix.EINVAL
	}
	if fd == -1 && flags == unix.LANDLOCK_RESTRICT_SELF_LOG_SUBDOMAINS_OFF {
		return 0, nil
	}
	rs, err := rulesetAt(t, fd, unix.O_RDONLY)
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

// landlockSocket checks bind (BIND_TCP) or connect (CONNECT_TCP) of s to
// addr against the task's domain, as Linux's hooks do before the socket
// sees the call: only TCP sockets are checked; an address too short for
// its family is EINVAL, one of another family than the socket's EINVAL
// (AF_UNSPEC aside: a connect to it, which ends a connection, is always
// allowed, and a bind to it is one to INADDR_ANY or EAFNOSUPPORT); a
// port no layer's rule allows, EACCES.
func landlockSocket(t *kernel.Task, s socket.Socket, addr []byte, access uint64) error {
	dom := t.LandlockDomain()
	if dom == nil || s.Type() != unix.SOCK_STREAM || s.Protocol() != unix.IPPROTO_TCP ||
		s.Family() != unix.AF_INET && s.Family() != unix.AF_INET6 {
		return nil
	}
	if len(addr) < 2 {
		return unix.EINVAL
	}
	family := int(binary.LittleEndian.Uint16(addr))
	switch family {
	case unix.AF_UNSPEC, unix.AF_INET:
		if len(addr) < unix.SizeofSockaddrInet4 {
			return unix.EINVAL
		}
	case unix.AF_INET6:
		if len(addr) < sizeofSockaddrIn6RFC2133 {
			return unix.EINVAL
		}
	default:
		return nil
	}
	if family == unix.AF_UNSPEC {
		if access == unix.LANDLOCK_ACCESS_NET_CONNECT_TCP {
			return nil
		}
		if binary.BigEndian.Uint32(addr[4:8]) != 0 { // INADDR_ANY
			return unix.EAFNOSUPPORT
		}
	} else if family != s.Family() {
		return unix.EINVAL
	}
	return dom.CheckPort(binary.BigEndian.Uint16(addr[2:4]), access)
}

// sizeofSockaddrIn6RFC2133 is an AF_INET6 address without its scope id,
// the shortest Linux takes (SIN6_LEN_RFC2133).
const sizeofSockaddrIn6RFC2133 = 24

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
