package boot

import (
	"errors"
	"strings"
	"testing"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/sentry/kernel"
)

// Where runc is the reference below, the config was run with runc 1.1.5
// on the host.

// linuxCaps are every capability by its OCI name and Linux number.
var linuxCaps = map[string]uint{
	"CAP_CHOWN": unix.CAP_CHOWN, "CAP_DAC_OVERRIDE": unix.CAP_DAC_OVERRIDE, "CAP_DAC_READ_SEARCH": unix.CAP_DAC_READ_SEARCH,
	"CAP_FOWNER": unix.CAP_FOWNER, "CAP_FSETID": unix.CAP_FSETID, "CAP_KILL": unix.CAP_KILL, "CAP_SETGID": unix.CAP_SETGID,
	"CAP_SETUID": unix.CAP_SETUID, "CAP_SETPCAP": unix.CAP_SETPCAP, "CAP_LINUX_IMMUTABLE": unix.CAP_LINUX_IMMUTABLE,
	"CAP_NET_BIND_SERVICE": unix.CAP_NET_BIND_SERVICE, "CAP_NET_BROADCAST": unix.CAP_NET_BROADCAST,
	"CAP_NET_ADMIN": unix.CAP_NET_ADMIN, "CAP_NET_RAW": unix.CAP_NET_RAW, "CAP_IPC_LOCK": unix.CAP_IPC_LOCK,
	"CAP_IPC_OWNER": unix.CAP_IPC_OWNER, "CAP_SYS_MODULE": unix.CAP_SYS_MODULE, "CAP_SYS_RAWIO": unix.CAP_SYS_RAWIO,
	"CAP_SYS_CHROOT": unix.CAP_SYS_CHROOT, "CAP_SYS_PTRACE": unix.CAP_SYS_PTRACE, "CAP_SYS_PACCT": unix.CAP_SYS_PACCT,
	"CAP_SYS_ADMIN": unix.CAP_SYS_ADMIN, "CAP_SYS_BOOT": unix.CAP_SYS_BOOT, "CAP_SYS_NICE": unix.CAP_SYS_NICE,
	"CAP_SYS_RESOURCE": unix.CAP_SYS_RESOURCE, "CAP_SYS_TIME": unix.CAP_SYS_TIME, "CAP_SYS_TTY_CONFIG": unix.CAP_SYS_TTY_CONFIG,
	"CAP_MKNOD": unix.CAP_MKNOD, "CAP_LEASE": unix.CAP_LEASE, "CAP_AUDIT_WRITE": unix.CAP_AUDIT_WRITE,
	"CAP_AUDIT_CONTROL": unix.CAP_AUDIT_CONTROL, "CAP_SETFCAP": unix.CAP_SETFCAP, "CAP_MAC_OVERRIDE": unix.CAP_MAC_OVERRIDE,
	"CAP_MAC_ADMIN": unix.CAP_MAC_ADMIN, "CAP_SYSLOG": unix.CAP_SYSLOG, "CAP_WAKE_ALARM": unix.CAP_WAKE_ALARM,
	"CAP_BLOCK_SUSPEND": unix.CAP_BLOCK_SUSPEND, "CAP_AUDIT_READ": unix.CAP_AUDIT_READ, "CAP_PERFMON": unix.CAP_PERFMON,
	"CAP_BPF": unix.CAP_BPF, "CAP_CHECKPOINT_RESTORE": unix.CAP_CHECKPOINT_RESTORE,
}

func TestEveryCapabilityNameMapsToItsLinuxNumber(t *testing.T) {
	if len(linuxCaps) != unix.CAP_LAST_CAP+1 {
		t.Fatalf("the table lists %d capabilities, Linux has %d", len(linuxCaps), unix.CAP_LAST_CAP+1)
	}
	var all uint64
	for name, bit := range linuxCaps {
		m, err := capMask("effective", []string{name})
		if err != nil || m != 1<<bit {
			t.Errorf("%s: mask %#x, %v; want bit %d", name, m, err, bit)
		}
		all |= 1 << bit
	}
	names := make([]string, 0, len(linuxCaps))
	for name := range linuxCaps {
		names = append(names, name)
	}
	if m, err := capMask("bounding", names); err != nil || m != all {
		t.Errorf("all capabilities: %#x, %v; want %#x", m, err, all)
	}
	if m, err := capMask("bounding", nil); err != nil || m != 0 {
		t.Errorf("no capabilities: %#x, %v", m, err)
	}
}

// initErr checks that err is an InitError whose message holds every one
// of parts.
func initErr(t *testing.T, err error, parts ...string) {
	t.Helper()
	var ie *kernel.InitError
	if !errors.As(err, &ie) {
		t.Fatalf("error %v (%T), want a *kernel.InitError", err, err)
	}
	for _, p := range parts {
		if !strings.Contains(ie.Msg, p) {
			t.Errorf("%q does not name %q", ie.Msg, p)
		}
	}
}

func process() *specs.Process {
	return &specs.Process{Args: []string{"/bin/sh", "-c", "true"}, Env: []string{"PATH=/bin"}, Cwd: "/work",
		User: specs.User{UID: 1000, GID: 1001, AdditionalGids: []uint32{5, 6}}}
}

func TestAnUnknownCapabilityIsAnInitErrorNamingItsSetAndName(t *testing.T) {
	// runc knows the names exactly as Linux's headers spell them: a name
	// without "CAP_" or in lower case is none of them (runc ignores it
	// with a warning, so it never grants what it names).
	sets := map[string]func(c *specs.LinuxCapabilities, names []string){
		"effective":   func(c *specs.LinuxCapabilities, n []string) { c.Effective = n },
		"permitted":   func(c *specs.LinuxCapabilities, n []string) { c.Permitted = n },
		"inheritable": func(c *specs.LinuxCapabilities, n []string) { c.Inheritable = n },
		"bounding":    func(c *specs.LinuxCapabilities, n []string) { c.Bounding = n },
	}
	for set, put := range sets {
		for _, name := range []string{"CAP_FLY", "KILL", "cap_kill", "CAP_Kill", ""} {
			p := process()
			p.Capabilities = &specs.LinuxCapabilities{}
			put(p.Capabilities, []string{"CAP_CHOWN", name})
			_, err := initSpec(p)
			initErr(t, err, "process.capabilities."+set, `"`+name+`"`)
		}
	}
}

func TestCapabilitySetsLandInTheirMasks(t *testing.T) {
	p := process()
	p.Capabilities = &specs.LinuxCapabilities{Effective: []string{"CAP_KILL"}, Permitted: []string{"CAP_KILL", "CAP_CHOWN"},
		Inheritable: []string{"CAP_SETUID"}, Bounding: []string{"CAP_KILL", "CAP_CHOWN", "CAP_SYS_ADMIN"}}
	s, err := initSpec(p)
	if err != nil {
		t.Fatal(err)
	}
	if s.CapEffective != 1<<unix.CAP_KILL || s.CapPermitted != 1<<unix.CAP_KILL|1<<unix.CAP_CHOWN ||
		s.CapInheritable != 1<<unix.CAP_SETUID || s.CapBounding != 1<<unix.CAP_KILL|1<<unix.CAP_CHOWN|1<<unix.CAP_SYS_ADMIN {
		t.Errorf("masks e %#x p %#x i %#x b %#x", s.CapEffective, s.CapPermitted, s.CapInheritable, s.CapBounding)
	}
	// Without a capabilities object runc runs the process with none.
	s, err = initSpec(process())
	if err != nil || s.CapEffective|s.CapPermitted|s.CapInheritable|s.CapBounding != 0 {
		t.Errorf("no capabilities object: %+v, %v", s, err)
	}
}

// linuxRlimits are every resource by its OCI name and Linux number.
var linuxRlimits = map[string]int{
	"RLIMIT_CPU": unix.RLIMIT_CPU, "RLIMIT_FSIZE": unix.RLIMIT_FSIZE, "RLIMIT_DATA": unix.RLIMIT_DATA,
	"RLIMIT_STACK": unix.RLIMIT_STACK, "RLIMIT_CORE": unix.RLIMIT_CORE, "RLIMIT_RSS": unix.RLIMIT_RSS,
	"RLIMIT_NPROC": unix.RLIMIT_NPROC, "RLIMIT_NOFILE": unix.RLIMIT_NOFILE, "RLIMIT_MEMLOCK": unix.RLIMIT_MEMLOCK,
	"RLIMIT_AS": unix.RLIMIT_AS, "RLIMIT_LOCKS": unix.RLIMIT_LOCKS, "RLIMIT_SIGPENDING": unix.RLIMIT_SIGPENDING,
	"RLIMIT_MSGQUEUE": unix.RLIMIT_MSGQUEUE, "RLIMIT_NICE": unix.RLIMIT_NICE, "RLIMIT_RTPRIO": unix.RLIMIT_RTPRIO,
	"RLIMIT_RTTIME": unix.RLIMIT_RTTIME,
}

func TestEveryRlimitLandsInItsResourceWithSoftAndHard(t *testing.T) {
	if len(linuxRlimits) != kernel.NumLimits {
		t.Fatalf("the table lists %d resources, the kernel has %d", len(linuxRlimits), kernel.NumLimits)
	}
	p := process()
	want := map[int]kernel.Limit{}
	i := uint64(0)
	for name, res := range linuxRlimits {
		i++
		p.Rlimits = append(p.Rlimits, specs.POSIXRlimit{Type: name, Soft: 100 * i, Hard: 100*i + 1})
		want[res] = kernel.Limit{Cur: 100 * i, Max: 100*i + 1}
	}
	s, err := initSpec(p)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Limits) != len(want) {
		t.Errorf("limits %v, want %v", s.Limits, want)
	}
	for res, l := range want {
		if s.Limits[res] != l {
			t.Errorf("resource %d: %+v, want %+v", res, s.Limits[res], l)
		}
	}
}

func TestTheLastRlimitOfAResourceWins(t *testing.T) {
	// runc sets them in order.
	p := process()
	p.Rlimits = []specs.POSIXRlimit{{Type: "RLIMIT_NOFILE", Soft: 1024, Hard: 1024}, {Type: "RLIMIT_NOFILE", Soft: 200, Hard: 300}}
	s, err := initSpec(p)
	if err != nil || s.Limits[unix.RLIMIT_NOFILE] != (kernel.Limit{Cur: 200, Max: 300}) {
		t.Errorf("limits %v, %v", s.Limits, err)
	}
}

func TestAnUnknownRlimitIsAnInitErrorNamingIt(t *testing.T) {
	// runc: "wrong rlimit value: rlimit_nofile".
	for _, name := range []string{"RLIMIT_FOO", "rlimit_nofile", "NOFILE", ""} {
		p := process()
		p.Rlimits = []specs.POSIXRlimit{{Type: name, Soft: 1, Hard: 1}}
		_, err := initSpec(p)
		initErr(t, err, "process.rlimits", `"`+name+`"`)
	}
}

func TestAnRlimitWithSoftAboveHardIsAnInitError(t *testing.T) {
	// setrlimit(2) refuses it (EINVAL), and runc fails the container.
	p := process()
	p.Rlimits = []specs.POSIXRlimit{{Type: "RLIMIT_NOFILE", Soft: 2048, Hard: 1024}}
	_, err := initSpec(p)
	initErr(t, err, "process.rlimits", "RLIMIT_NOFILE", "2048", "1024")
}

func TestUmaskDefaultsTo022AndKeepsOnlyPermissionBits(t *testing.T) {
	u := func(v uint32) *uint32 { return &v }
	for _, c := range []struct {
		umask *uint32
		want  uint32
	}{{nil, 0o022}, {u(0), 0}, {u(0o077), 0o077}, {u(0o7777), 0o777}} {
		p := process()
		p.User.Umask = c.umask
		s, err := initSpec(p)
		if err != nil || s.Umask != c.want {
			t.Errorf("umask %v: %#o, %v; want %#o", c.umask, s.Umask, err, c.want)
		}
	}
}

func TestInitSpecCarriesTheProcessOver(t *testing.T) {
	for _, nnp := range []bool{false, true} {
		p := process()
		p.NoNewPrivileges = nnp
		s, err := initSpec(p)
		if err != nil {
			t.Fatal(err)
		}
		if s.NoNewPrivs != nnp || strings.Join(s.Argv, " ") != "/bin/sh -c true" || strings.Join(s.Env, " ") != "PATH=/bin" ||
			s.Cwd != "/work" || s.UID != 1000 || s.GID != 1001 || len(s.Groups) != 2 || s.Groups[0] != 5 || s.Groups[1] != 6 {
			t.Errorf("noNewPrivileges %v: %+v", nnp, s)
		}
	}
}
