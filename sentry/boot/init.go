package boot

import (
	"fmt"
	"slices"
	"strings"
	"time"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/sentry/fs/host"
	"github.com/moat-sandbox/moat/sentry/kernel"
	"github.com/moat-sandbox/moat/sentry/vfs"
)

type specsSpec = specs.Spec

var timeNow = time.Now

// InitSignalsAnnotation, set to InitSignalsPlain in config.json's
// annotations, makes init take signals as any process does
// (kernel.InitSpec.PlainSignals); `moat sandbox` sets it.
const (
	InitSignalsAnnotation = "dev.moat.init-signals"
	InitSignalsPlain      = "plain"
)

// defaultUmask is what runc gives a process whose config sets none.
const defaultUmask = 0o022

// rlimitNames maps the OCI rlimit names to Linux resource numbers.
var rlimitNames = map[string]int{
	"RLIMIT_CPU": unix.RLIMIT_CPU, "RLIMIT_FSIZE": unix.RLIMIT_FSIZE, "RLIMIT_DATA": unix.RLIMIT_DATA,
	"RLIMIT_STACK": unix.RLIMIT_STACK, "RLIMIT_CORE": unix.RLIMIT_CORE, "RLIMIT_RSS": unix.RLIMIT_RSS,
	"RLIMIT_NPROC": unix.RLIMIT_NPROC, "RLIMIT_NOFILE": unix.RLIMIT_NOFILE, "RLIMIT_MEMLOCK": unix.RLIMIT_MEMLOCK,
	"RLIMIT_AS": unix.RLIMIT_AS, "RLIMIT_LOCKS": unix.RLIMIT_LOCKS, "RLIMIT_SIGPENDING": unix.RLIMIT_SIGPENDING,
	"RLIMIT_MSGQUEUE": unix.RLIMIT_MSGQUEUE, "RLIMIT_NICE": unix.RLIMIT_NICE, "RLIMIT_RTPRIO": unix.RLIMIT_RTPRIO,
	"RLIMIT_RTTIME": unix.RLIMIT_RTTIME,
}

// initSpec translates the OCI process into the kernel's terms.
func initSpec(p *specs.Process) (kernel.InitSpec, error) {
	s := kernel.InitSpec{Argv: p.Args, Env: p.Env, Cwd: p.Cwd, UID: p.User.UID, GID: p.User.GID,
		Groups: p.User.AdditionalGids, Umask: defaultUmask, Limits: make(map[int]kernel.Limit)}
	if p.User.Umask != nil {
		s.Umask = *p.User.Umask & 0o777
	}
	s.NoNewPrivs = p.NoNewPrivileges
	s.OOMScoreAdj = p.OOMScoreAdj
	if c := p.Capabilities; c != nil {
		var err error
		for _, set := range []struct {
			name  string
			names []string
			mask  *uint64
		}{{"effective", c.Effective, &s.CapEffective}, {"permitted", c.Permitted, &s.CapPermitted},
			{"inheritable", c.Inheritable, &s.CapInheritable}, {"bounding", c.Bounding, &s.CapBounding},
			{"ambient", c.Ambient, &s.CapAmbient}} {
			if *set.mask, err = capMask(set.name, set.names); err != nil {
				return s, err
			}
		}
	}
	for _, r := range p.Rlimits {
		n, ok := rlimitNames[r.Type]
		if !ok {
			return s, &kernel.InitError{Msg: fmt.Sprintf("process.rlimits: unknown rlimit type %q", r.Type)}
		}
		if r.Soft > r.Hard {
			// setrlimit(2) refuses it, and so runc's container fails.
			return s, &kernel.InitError{Msg: fmt.Sprintf("process.rlimits: %s: soft limit %d is above the hard limit %d",
				r.Type, r.Soft, r.Hard)}
		}
		s.Limits[n] = kernel.Limit{Cur: r.Soft, Max: r.Hard}
	}
	return s, nil
}

// stdioFiles wraps the sentry's fds 0, 1 and 2, which `moat create` set to
// the container's stdio, as the guest's.
func stdioFiles() ([3]*vfs.File, error) {
	var files [3]*vfs.File
	for fd := 0; fd < 3; fd++ {
		flags, err := unix.FcntlInt(uintptr(fd), unix.F_GETFL, 0)
		if err != nil {
			continue // closed: the guest finds the fd closed too
		}
		dup, err := unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, 3)
		if err != nil {
			return files, fmt.Errorf("stdio fd %d: %w", fd, err)
		}
		impl, err := host.NewStdio(dup)
		if err != nil {
			unix.Close(dup)
			return files, fmt.Errorf("stdio fd %d: %w", fd, err)
		}
		files[fd] = vfs.NewFile(impl, vfs.Path{}, flags&(unix.O_ACCMODE|unix.O_APPEND|unix.O_NONBLOCK))
	}
	return files, nil
}

// CapNames are the capabilities by number, as OCI configs name them
// without their CAP_ prefix (Linux 6.1: CAP_LAST_CAP is CHECKPOINT_RESTORE).
var CapNames = []string{"CHOWN", "DAC_OVERRIDE", "DAC_READ_SEARCH", "FOWNER", "FSETID", "KILL", "SETGID", "SETUID",
	"SETPCAP", "LINUX_IMMUTABLE", "NET_BIND_SERVICE", "NET_BROADCAST", "NET_ADMIN", "NET_RAW", "IPC_LOCK",
	"IPC_OWNER", "SYS_MODULE", "SYS_RAWIO", "SYS_CHROOT", "SYS_PTRACE", "SYS_PACCT", "SYS_ADMIN", "SYS_BOOT",
	"SYS_NICE", "SYS_RESOURCE", "SYS_TIME", "SYS_TTY_CONFIG", "MKNOD", "LEASE", "AUDIT_WRITE", "AUDIT_CONTROL",
	"SETFCAP", "MAC_OVERRIDE", "MAC_ADMIN", "SYSLOG", "WAKE_ALARM", "BLOCK_SUSPEND", "AUDIT_READ", "PERFMON",
	"BPF", "CHECKPOINT_RESTORE"}

// capMask turns the capability names of one set ("CAP_KILL", spelt as
// runc knows them) into a bit mask.
func capMask(set string, names []string) (uint64, error) {
	var m uint64
	for _, n := range names {
		i := -1
		if name, ok := strings.CutPrefix(n, "CAP_"); ok {
			i = slices.Index(CapNames, name)
		}
		if i < 0 {
			return 0, &kernel.InitError{Msg: fmt.Sprintf("process.capabilities.%s: unknown capability %q", set, n)}
		}
		m |= 1 << i
	}
	return m, nil
}
