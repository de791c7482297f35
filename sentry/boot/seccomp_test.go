package boot

import (
	"errors"
	"testing"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/internal/seccomp"
	"github.com/moat-sandbox/moat/sentry/kernel"
)

// judgeProfile compiles s and runs it on one call.
func judgeProfile(t *testing.T, s *specs.LinuxSeccomp, nr uintptr, args ...uint64) uint32 {
	t.Helper()
	prog, err := seccompProgram(s)
	if err != nil {
		t.Fatal(err)
	}
	d := seccomp.Data{Nr: int32(nr), Arch: seccomp.ArchX86_64}
	copy(d.Args[:], args)
	return seccomp.Run(prog, &d)
}

func uintp(v uint) *uint { return &v }

// TestProfileIsReadAsRuncReadsIt pins seccompProgram's reading of the OCI
// profile: actions, errnos, the default, runc's ENOSYS for calls newer
// than the profile, and names of other architectures skipped.
func TestProfileIsReadAsRuncReadsIt(t *testing.T) {
	s := &specs.LinuxSeccomp{DefaultAction: specs.ActErrno, Syscalls: []specs.LinuxSyscall{
		{Names: []string{"getppid", "read", "not_a_call", "arm_fadvise64_64"}, Action: specs.ActAllow},
		{Names: []string{"vmsplice"}, Action: specs.ActErrno, ErrnoRet: uintp(uint(unix.EXDEV))},
		{Names: []string{"getpgrp"}, Action: specs.ActKill},
		{Names: []string{"getsid"}, Action: specs.ActTrap},
	}}
	for _, c := range []struct {
		name string
		nr   uintptr
		want uint32
	}{
		{"an allowed call", unix.SYS_GETPPID, seccomp.ActAllow},
		{"ERRNO with errnoRet", unix.SYS_VMSPLICE, seccomp.Errno(unix.EXDEV)},
		{"SCMP_ACT_KILL", unix.SYS_GETPGRP, seccomp.ActKillThread},
		{"TRAP", unix.SYS_GETSID, seccomp.ActTrap},
		{"an unnamed call below the highest named", unix.SYS_OPENAT, seccomp.Errno(unix.EPERM)},
		{"a call above the highest named", unix.SYS_MSEAL, seccomp.Errno(unix.ENOSYS)},
	} {
		if got := judgeProfile(t, s, c.nr); got != c.want {
			t.Errorf("%s: %#x, want %#x", c.name, got, c.want)
		}
	}
	s.DefaultAction = specs.ActAllow
	if got := judgeProfile(t, s, unix.SYS_MSEAL); got != seccomp.ActAllow {
		t.Errorf("a call above the highest named, default ALLOW: %#x, want ALLOW", got)
	}
}

// TestProfileConditions: conditions on different arguments must all hold;
// several on one argument are alternatives (runc's reading).
func TestProfileConditions(t *testing.T) {
	s := &specs.LinuxSeccomp{DefaultAction: specs.ActAllow, Syscalls: []specs.LinuxSyscall{
		{Names: []string{"socket"}, Action: specs.ActErrno, ErrnoRet: uintp(uint(unix.EINVAL)), Args: []specs.LinuxSeccompArg{
			{Index: 0, Value: unix.AF_NETLINK, Op: specs.OpEqualTo},
			{Index: 2, Value: unix.NETLINK_AUDIT, Op: specs.OpEqualTo},
		}},
		{Names: []string{"personality"}, Action: specs.ActErrno, Args: []specs.LinuxSeccompArg{
			{Index: 0, Value: 8, Op: specs.OpEqualTo},
			{Index: 0, Value: 0x20000, Op: specs.OpEqualTo},
		}},
		{Names: []string{"clone"}, Action: specs.ActErrno, Args: []specs.LinuxSeccompArg{
			{Index: 0, Value: unix.CLONE_NEWUSER, ValueTwo: unix.CLONE_NEWUSER, Op: specs.OpMaskedEqual},
		}},
	}}
	for _, c := range []struct {
		name string
		nr   uintptr
		args []uint64
		want uint32
	}{
		{"a netlink audit socket", unix.SYS_SOCKET, []uint64{unix.AF_NETLINK, 0, unix.NETLINK_AUDIT}, seccomp.Errno(unix.EINVAL)},
		{"a netlink route socket", unix.SYS_SOCKET, []uint64{unix.AF_NETLINK, 0, unix.NETLINK_ROUTE}, seccomp.ActAllow},
		{"an inet socket", unix.SYS_SOCKET, []uint64{unix.AF_INET, 0, unix.NETLINK_AUDIT}, seccomp.ActAllow},
		{"personality's first value", unix.SYS_PERSONALITY, []uint64{8}, seccomp.Errno(unix.EPERM)},
		{"personality's second value", unix.SYS_PERSONALITY, []uint64{0x20000}, seccomp.Errno(unix.EPERM)},
		{"personality's other", unix.SYS_PERSONALITY, []uint64{0}, seccomp.ActAllow},
		{"clone into a user namespace", unix.SYS_CLONE, []uint64{unix.CLONE_NEWUSER | unix.CLONE_VM}, seccomp.Errno(unix.EPERM)},
		{"clone of a thread", unix.SYS_CLONE, []uint64{unix.CLONE_VM | unix.CLONE_THREAD}, seccomp.ActAllow},
	} {
		if got := judgeProfile(t, s, c.nr, c.args...); got != c.want {
			t.Errorf("%s: %#x, want %#x", c.name, got, c.want)
		}
	}
}

// TestProfileTheSentryCannotServeIsAConfigError: user-space notification
// has no listener in the sandbox; an unknown action is refused.
func TestProfileTheSentryCannotServeIsAConfigError(t *testing.T) {
	for _, s := range []*specs.LinuxSeccomp{
		{DefaultAction: specs.ActAllow, ListenerPath: "/run/notify.sock"},
		{DefaultAction: specs.ActNotify},
		{DefaultAction: "SCMP_ACT_MAYBE"},
		{DefaultAction: specs.ActAllow, Syscalls: []specs.LinuxSyscall{{Names: []string{"read"}, Action: specs.ActErrno,
			Args: []specs.LinuxSeccompArg{{Index: 6, Op: specs.OpEqualTo}}}}},
	} {
		var ie *kernel.InitError
		if _, err := seccompProgram(s); !errors.As(err, &ie) {
			t.Errorf("%+v: %v, want an InitError", s, err)
		}
	}
	if prog, err := seccompProgram(nil); prog != nil || err != nil {
		t.Errorf("no profile: %v, %v", prog, err)
	}
}
