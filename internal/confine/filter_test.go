package confine

import (
	"fmt"
	"os"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/internal/seccomp"
)

// kvmRun is KVM_RUN (<linux/kvm.h>: _IO(KVMIO, 0x80)), which unix lacks.
const kvmRun = 0xae80

// sentryOnKVM is the sentry's allowlist on a KVM platform that makes
// KVM_RUN alone.
var sentryOnKVM = SentryCalls.With(KVMCalls([]uint64{kvmRun}))

// judge runs the allowlist's compiled filter on one call.
func judge(t *testing.T, l Allowlist, m Mode, nr uintptr, args ...uint64) uint32 {
	t.Helper()
	f := l.Filter(m)
	prog, err := f.Compile()
	if err != nil {
		t.Fatal(err)
	}
	d := seccomp.Data{Nr: int32(nr), Arch: seccomp.ArchX86_64}
	copy(d.Args[:], args)
	return seccomp.Run(prog, &d)
}

// forbidden are calls neither confined process may ever make: each would
// reach the host's files, programs, network, kernel or other processes.
var forbidden = []struct {
	name string
	nr   uintptr
	args []uint64
}{
	{"open", unix.SYS_OPEN, nil},
	{"execve", unix.SYS_EXECVE, nil},
	{"execveat", unix.SYS_EXECVEAT, nil},
	{"socket", unix.SYS_SOCKET, []uint64{unix.AF_INET}},
	{"connect", unix.SYS_CONNECT, nil},
	{"fork-like clone", unix.SYS_CLONE, []uint64{uint64(unix.SIGCHLD)}},
	{"clone into a new user namespace", unix.SYS_CLONE, []uint64{goThreadFlags | unix.CLONE_NEWUSER}},
	{"clone3", unix.SYS_CLONE3, nil},
	{"vfork", unix.SYS_VFORK, nil},
	{"executable mapping", unix.SYS_MMAP, []uint64{0, 4096, unix.PROT_READ | unix.PROT_EXEC}},
	{"making memory executable", unix.SYS_MPROTECT, []uint64{0, 4096, unix.PROT_EXEC}},
	{"ptrace", unix.SYS_PTRACE, nil},
	{"process_vm_writev", unix.SYS_PROCESS_VM_WRITEV, nil},
	{"mount", unix.SYS_MOUNT, nil},
	{"umount2", unix.SYS_UMOUNT2, nil},
	{"pivot_root", unix.SYS_PIVOT_ROOT, nil},
	{"unshare", unix.SYS_UNSHARE, nil},
	{"setns", unix.SYS_SETNS, nil},
	{"keyctl", unix.SYS_KEYCTL, nil},
	{"bpf", unix.SYS_BPF, nil},
	{"perf_event_open", unix.SYS_PERF_EVENT_OPEN, nil},
	{"userfaultfd", unix.SYS_USERFAULTFD, nil},
	{"io_uring_setup", unix.SYS_IO_URING_SETUP, nil},
	{"open_by_handle_at", unix.SYS_OPEN_BY_HANDLE_AT, nil},
	{"init_module", unix.SYS_INIT_MODULE, nil},
	{"kexec_load", unix.SYS_KEXEC_LOAD, nil},
	{"reboot", unix.SYS_REBOOT, nil},
	{"iopl", unix.SYS_IOPL, nil},
	{"ioperm", unix.SYS_IOPERM, nil},
	{"modify_ldt", unix.SYS_MODIFY_LDT, nil},
	{"seccomp", unix.SYS_SECCOMP, nil},
	{"prctl", unix.SYS_PRCTL, nil},
	{"setuid", unix.SYS_SETUID, nil},
	{"capset", unix.SYS_CAPSET, nil},
	{"chroot", unix.SYS_CHROOT, nil},
	{"memfd_create", unix.SYS_MEMFD_CREATE, nil},
	{"a terminal's input injected (TIOCSTI)", unix.SYS_IOCTL, []uint64{0, unix.TIOCSTI}},
	{"fcntl F_SETOWN", unix.SYS_FCNTL, []uint64{0, unix.F_SETOWN}},
}

// TestAllowlistsRefuseWhatNeitherProcessMayDo: each forbidden call kills
// the sentry and the gofer (and is only logged in the audit mode).
func TestAllowlistsRefuseWhatNeitherProcessMayDo(t *testing.T) {
	for _, l := range []struct {
		name string
		list Allowlist
	}{{"sentry", SentryCalls}, {"sentry on KVM", sentryOnKVM}, {"gofer", GoferCalls}} {
		for _, c := range forbidden {
			if got := judge(t, l.list, Kill, c.nr, c.args...); got != seccomp.ActKillProcess {
				t.Errorf("%s: %s: %#x, want KILL_PROCESS", l.name, c.name, got)
			}
			if got := judge(t, l.list, Log, c.nr, c.args...); got != seccomp.ActLog {
				t.Errorf("%s, audit mode: %s: %#x, want LOG", l.name, c.name, got)
			}
		}
	}
}

// TestSentryOpensNothing: the sentry's list has no call that names a path.
func TestSentryOpensNothing(t *testing.T) {
	for _, nr := range []uintptr{unix.SYS_OPENAT, unix.SYS_OPENAT2, unix.SYS_NEWFSTATAT, unix.SYS_STATX,
		unix.SYS_READLINKAT, unix.SYS_MKDIRAT, unix.SYS_UNLINKAT, unix.SYS_RENAMEAT2, unix.SYS_LINKAT} {
		if got := judge(t, SentryCalls, Kill, nr); got != seccomp.ActKillProcess {
			t.Errorf("call %d: %#x, want KILL_PROCESS", nr, got)
		}
	}
}

// TestArgumentsAreChecked: the calls allowed with some arguments only are
// refused the others.
func TestArgumentsAreChecked(t *testing.T) {
	for _, c := range []struct {
		name  string
		list  Allowlist
		nr    uintptr
		args  []uint64
		allow bool
	}{
		{"a Go thread", SentryCalls, unix.SYS_CLONE, []uint64{goThreadFlags}, true},
		{"a read-write mapping", SentryCalls, unix.SYS_MMAP, []uint64{0, 4096, unix.PROT_READ | unix.PROT_WRITE}, true},
		{"a mapping with PROT_EXEC in the high word", SentryCalls, unix.SYS_MMAP, []uint64{0, 4096, unix.PROT_READ | 1<<40}, true},
		{"F_GETFL", SentryCalls, unix.SYS_FCNTL, []uint64{3, unix.F_GETFL}, true},
		{"F_DUPFD_CLOEXEC", SentryCalls, unix.SYS_FCNTL, []uint64{3, unix.F_DUPFD_CLOEXEC}, true},
		{"F_DUPFD (not close-on-exec)", SentryCalls, unix.SYS_FCNTL, []uint64{3, unix.F_DUPFD}, false},
		{"TCGETS", SentryCalls, unix.SYS_IOCTL, []uint64{0, unix.TCGETS}, true},
		{"TIOCSWINSZ", SentryCalls, unix.SYS_IOCTL, []uint64{0, unix.TIOCSWINSZ}, true},
		{"TIOCSETD", SentryCalls, unix.SYS_IOCTL, []uint64{0, unix.TIOCSETD}, false},
		{"its own affinity", SentryCalls, unix.SYS_SCHED_GETAFFINITY, []uint64{0}, true},
		{"another's affinity", SentryCalls, unix.SYS_SCHED_GETAFFINITY, []uint64{1}, false},
		{"a FIFO", GoferCalls, unix.SYS_MKNODAT, []uint64{3, 0, unix.S_IFIFO | 0o600}, true},
		{"a socket node", GoferCalls, unix.SYS_MKNODAT, []uint64{3, 0, unix.S_IFSOCK | 0o600}, true},
		{"a character device", GoferCalls, unix.SYS_MKNODAT, []uint64{3, 0, unix.S_IFCHR | 0o600, unix.Mkdev(1, 3)}, false},
		{"a block device", GoferCalls, unix.SYS_MKNODAT, []uint64{3, 0, unix.S_IFBLK | 0o600}, false},
		{"SO_TYPE", GoferCalls, unix.SYS_GETSOCKOPT, []uint64{3, unix.SOL_SOCKET, unix.SO_TYPE}, true},
		{"SO_PEERCRED", GoferCalls, unix.SYS_GETSOCKOPT, []uint64{3, unix.SOL_SOCKET, unix.SO_PEERCRED}, false},
		{"a packet socket's fanout group", SentryCalls, unix.SYS_SETSOCKOPT, []uint64{3, unix.SOL_PACKET, unix.PACKET_FANOUT}, true},
		{"a socket's SO_BINDTODEVICE", SentryCalls, unix.SYS_SETSOCKOPT, []uint64{3, unix.SOL_SOCKET, unix.SO_BINDTODEVICE}, false},
		{"KVM_RUN on systrap", SentryCalls, unix.SYS_IOCTL, []uint64{3, kvmRun}, false},
		{"KVM_RUN on KVM", sentryOnKVM, unix.SYS_IOCTL, []uint64{3, kvmRun}, true},
		{"a terminal's size on KVM", sentryOnKVM, unix.SYS_IOCTL, []uint64{0, unix.TIOCGWINSZ}, true},
		{"TIOCSTI on KVM", sentryOnKVM, unix.SYS_IOCTL, []uint64{0, unix.TIOCSTI}, false},
		{"the gofer's poller waits", goferPolling, unix.SYS_EPOLL_PWAIT, []uint64{5, 0, 128, 10}, true},
		{"the gofer waits on another epoll", goferPolling, unix.SYS_EPOLL_PWAIT, []uint64{7, 0, 128, 10}, false},
		{"the gofer wakes its poller", goferPolling, unix.SYS_WRITE, []uint64{6, 0, 8}, true},
		{"the gofer writes a file", goferPolling, unix.SYS_WRITE, []uint64{3, 0, 8}, false},
		{"the gofer reads a file", goferPolling, unix.SYS_READ, []uint64{3, 0, 8}, false},
	} {
		want := uint32(seccomp.ActKillProcess)
		if c.allow {
			want = seccomp.ActAllow
		}
		if got := judge(t, c.list, Kill, c.nr, c.args...); got != want {
			t.Errorf("%s: %#x, want %#x", c.name, got, want)
		}
	}
}

// TestAllowlistsAreWellUnderGVisors: gVisor's sentry allows some seventy
// to eighty host calls; each of moat's must stay well under.
func TestAllowlistsAreWellUnderGVisors(t *testing.T) {
	for name, l := range map[string]Allowlist{"sentry": SentryCalls, "gofer": GoferCalls} {
		seen := map[uint32]bool{}
		for _, c := range l {
			if seen[c.Nr] {
				t.Errorf("%s: %s listed twice", name, c.Name)
			}
			seen[c.Nr] = true
			if c.Why == "" {
				t.Errorf("%s: %s has no reason", name, c.Name)
			}
			if (len(c.Rules) == 0) != (c.Args == "") {
				t.Errorf("%s: %s: its argument rules and their description disagree", name, c.Name)
			}
		}
		if len(l) > 60 {
			t.Errorf("%s allows %d host calls", name, len(l))
		}
	}
}

// TestGoferKeepsOnlyWhatTheContainerMayHold pins GoferPrivileges.
func TestGoferKeepsOnlyWhatTheContainerMayHold(t *testing.T) {
	user := IDs{UID: 1000, GID: 100, Groups: []uint32{27}}
	all := ^uint64(0)
	if keep, ids := GoferPrivileges(all, user); keep != GoferCapabilities|goferLinkCapability || ids != nil {
		t.Errorf("a container holding everything: %#x, %v", keep, ids)
	}
	if keep, ids := GoferPrivileges(1<<unix.CAP_DAC_OVERRIDE|1<<unix.CAP_KILL, user); keep != 1<<unix.CAP_DAC_OVERRIDE|goferLinkCapability ||
		ids == nil || ids.UID != 1000 || ids.GID != 100 {
		t.Errorf("a container without CAP_CHOWN: %#x, %v; want DAC_OVERRIDE and the link capability, as the process's user", keep, ids)
	}
	if keep, ids := GoferPrivileges(0, IDs{}); keep != goferLinkCapability || ids == nil || ids.UID != 0 {
		t.Errorf("a root container without capabilities: %#x, %v", keep, ids)
	}
}

// goferPolling is the gofer's allowlist with a poller on descriptors 5
// (epoll) and 6 (eventfd).
var goferPolling = GoferCalls.With(Poller{EpollFD: 5, EventFD: 6}.Calls())

func TestStartPollerFindsTheRuntimesEpollAndEventfd(t *testing.T) {
	p, err := StartPoller()
	if err != nil {
		t.Fatal(err)
	}
	for fd, want := range map[int]string{p.EpollFD: "anon_inode:[eventpoll]", p.EventFD: "anon_inode:[eventfd]"} {
		if got, err := os.Readlink(fmt.Sprintf("/proc/self/fd/%d", fd)); err != nil || got != want {
			t.Errorf("descriptor %d: %q, %v; want %s", fd, got, err, want)
		}
	}
}
