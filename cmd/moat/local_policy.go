package main

import (
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/moat-sandbox/moat/internal/bundle"
	"github.com/moat-sandbox/moat/internal/usernet"
	"github.com/moat-sandbox/moat/sentry/boot"
	"github.com/moat-sandbox/moat/sentry/net/netstack"
)

// localPolicy is what one `moat sandbox` run may see and do: the settings
// file's defaults, with the command line's flags over them (lists are
// added to, the rest replaced). Its toml names are the settings file's keys.
type localPolicy struct {
	RW       []string `toml:"rw"`        // host paths bind-mounted writable, beside the current directory
	RO       []string `toml:"ro"`        // host paths bind-mounted read-only
	Hide     []string `toml:"hide"`      // host paths made empty, beside defaultHidden
	Home     bool     `toml:"home"`      // show $HOME (read-only, under the overlay) instead of hiding it
	Env      []string `toml:"env"`       // NAME (the caller's value) or NAME=VALUE
	Net      bool     `toml:"net"`       // all of the network
	NetAllow []string `toml:"net_allow"` // the egress allowlist (docs/network.md)
	Memory   string   `toml:"memory"`    // bytes, with an optional k, m or g suffix
	CPUs     float64  `toml:"cpus"`
	PIDs     int64    `toml:"pids"`
	Timeout  string   `toml:"timeout"` // a Go duration ("90s", "10m") or seconds
}

// defaultHidden are the credential stores under $HOME that are hidden even
// when $HOME is shown (--home) or is the current directory.
var defaultHidden = []string{".ssh", ".aws", ".config/gcloud", ".docker", ".netrc", ".gnupg", ".kube"}

// defaultPIDs bounds the processes and threads of a sandbox when neither a
// flag nor the settings say: enough for a build, not for a fork bomb.
const defaultPIDs = 4096

// safeEnv are the caller's variables a sandbox gets without --env: what
// programs need to find their tools and talk to a terminal.
var safeEnv = []string{"PATH", "HOME", "USER", "LOGNAME", "SHELL", "TERM", "COLORTERM", "LANG", "LANGUAGE", "TZ"}

// secretName matches the names of variables that usually hold a secret;
// they are never passed unless --env gives their value.
// It is compiled on first use, not at init: the sentry and the gofer,
// the same binary, run every package's init and never match it, and an
// idle sandbox keeps what its inits allocated (docs/architecture.md).
var secretName = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?i)TOKEN|KEY|SECRET|PASSWORD|PASSWD|CREDENTIAL`) })

// localHost is what a sandbox's spec is made from besides the policy: the
// caller's side of the machine.
type localHost struct {
	cwd, home string
	uid, gid  int
	environ   []string
	memTotal  int64 // bytes; 0: unknown
	// private is the run's own directory (bundle and state), hidden from
	// the sandbox; emptyFile an empty file in it, which stands for a
	// hidden file.
	private, emptyFile string
	// resolvConf is the sandbox's /etc/resolv.conf when it has a
	// network (usernet.ResolvConf), in private.
	resolvConf string
	// keep: the run keeps its overlay (--keep), so a hidden $HOME is an
	// empty directory of the overlay rather than a tmpfs, and what the
	// command writes in it is kept too. keptRoot, where kept sandboxes
	// are, is always hidden.
	keep     bool
	keptRoot string
}

// flagError is a problem with one flag's value or one settings key: the
// message names it.
type flagError struct {
	flag string // "--rw", "--net-allow"...
	msg  string
}

func (e *flagError) Error() string { return e.flag + ": " + e.msg }

func flagErr(flag, format string, args ...any) error {
	return &flagError{flag: flag, msg: fmt.Sprintf(format, args...)}
}

// localMount is one mount the policy asks for, before it becomes a
// specs.Mount.
type localMount struct {
	dest string
	kind int // mountBindRW, mountBindRO, mountHide or mountHideKept
	flag string
}

const (
	mountBindRW = iota
	mountBindRO
	mountHide
	// mountHideKept hides a directory in the overlay itself (a kept
	// run's $HOME): no mount, so its files are the overlay's, and kept.
	mountHideKept
)

// hides reports whether m makes its path empty.
func (m localMount) hides() bool { return m.kind == mountHide || m.kind == mountHideKept }

// localSpec makes the OCI spec of a sandbox that runs args under policy p on
// host h, with a terminal or not, and the directories that the overlay
// itself must hide (mountHideKept). Every path is checked here, before
// anything starts.
func localSpec(p localPolicy, h localHost, args []string, terminal bool) (*specs.Spec, []string, error) {
	if len(args) == 0 {
		return nil, nil, errors.New("no command given: moat sandbox [flags] -- CMD [ARGS...]")
	}
	if p.Net && len(p.NetAllow) > 0 {
		return nil, nil, flagErr("--net", "conflicts with --net-allow: --net allows all of the network, --net-allow only what it lists")
	}
	if h.cwd == "/" {
		return nil, nil, errors.New("the current directory is /, which moat sandbox would share writable: run it from a project's directory")
	}
	mounts, overlayHidden, err := localMounts(p, h)
	if err != nil {
		return nil, nil, err
	}
	env, err := localEnv(p.Env, h)
	if err != nil {
		return nil, nil, err
	}
	resources, err := localResources(p, h)
	if err != nil {
		return nil, nil, err
	}
	if _, err := localTimeout(p.Timeout); err != nil {
		return nil, nil, err
	}

	spec := &specs.Spec{
		Version: specs.Version,
		Process: &specs.Process{
			Terminal:        terminal,
			User:            specs.User{UID: uint32(h.uid), GID: uint32(h.gid)},
			Args:            args,
			Env:             env,
			Cwd:             h.cwd,
			NoNewPrivileges: true,
		},
		// The host's own root, never written: root.readonly false puts
		// moat's overlay over it, so writes land in the sandbox's memory.
		Root: &specs.Root{Path: "/", Readonly: false},
		// The command is pid 1 only because the sandbox has pids of its
		// own: it takes the caller's signals as it would on the host.
		Annotations: map[string]string{bundle.WritesAnnotation: bundle.WritesOverlay, boot.InitSignalsAnnotation: boot.InitSignalsPlain},
		Linux:       &specs.Linux{Resources: resources},
	}
	if h.uid == 0 {
		// Root's commands run as root's do on the host, with the
		// capabilities a container's root has (Docker's default set).
		caps := []string{"CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_FSETID", "CAP_FOWNER", "CAP_MKNOD", "CAP_NET_RAW",
			"CAP_SETGID", "CAP_SETUID", "CAP_SETFCAP", "CAP_SETPCAP", "CAP_NET_BIND_SERVICE", "CAP_SYS_CHROOT",
			"CAP_KILL", "CAP_AUDIT_WRITE"}
		spec.Process.Capabilities = &specs.LinuxCapabilities{Bounding: caps, Effective: caps, Permitted: caps}
	}
	spec.Mounts = append(localBaseMounts(), mounts...)
	if p.Net || len(p.NetAllow) > 0 {
		// The network is a user-space one (usernet_start.go), whose
		// resolver is the sandbox's: --net-allow's names are resolved
		// there alone.
		spec.Annotations[usernet.Annotation] = usernet.AnnotationUser
		if len(p.NetAllow) > 0 {
			v, err := localNetAllow(p.NetAllow)
			if err != nil {
				return nil, nil, err
			}
			spec.Annotations[netAllowAnnotation] = v
		}
		spec.Mounts = append(spec.Mounts, specs.Mount{Destination: "/etc/resolv.conf", Type: "bind", Source: h.resolvConf,
			Options: []string{"bind", "ro", "nosuid", "nodev"}})
	}
	return spec, overlayHidden, nil
}

// netAllowAnnotation is the egress allowlist's annotation (docs/network.md).
const netAllowAnnotation = netstack.EgressAnnotation

// localNetAllow is the allowlist annotation for --net-allow's entries,
// checked here so that a bad one is an error naming the flag. (moat
// create adds the user-space network's resolver for the sentry.)
func localNetAllow(entries []string) (string, error) {
	v := strings.Join(entries, ",")
	if _, err := netstack.ParseEgress(v, nil); err != nil {
		return "", flagErr("--net-allow", "%s", strings.TrimPrefix(err.Error(), netstack.EgressAnnotation+": "))
	}
	return v, nil
}

// localBaseMounts are the file systems a container gets, in their usual
// places: the sandbox's own /proc, /dev (devfs, which the sentry adds),
// /dev/shm, /sys and an empty /tmp.
func localBaseMounts() []specs.Mount {
	return []specs.Mount{
		{Destination: "/proc", Type: "proc", Source: "proc", Options: []string{"nosuid", "noexec", "nodev"}},
		{Destination: "/dev/shm", Type: "tmpfs", Source: "shm", Options: []string{"nosuid", "nodev", "mode=1777"}},
		{Destination: "/sys", Type: "sysfs", Source: "sysfs", Options: []string{"nosuid", "noexec", "nodev", "ro"}},
		{Destination: "/tmp", Type: "tmpfs", Source: "tmpfs", Options: []string{"nosuid", "nodev", "mode=1777"}},
	}
}

// localMounts turns the policy's paths into mounts, parents before
// children: $HOME hidden (unless --home), the current directory and each
// --rw writable, each --ro read-only, the credential stores and each
// --hide made empty. A kept run's hidden $HOME is hidden by the overlay
// instead, unless a mount above it would cover that: it is returned apart.
func localMounts(p localPolicy, h localHost) ([]specs.Mount, []string, error) {
	var want []localMount
	add := func(flag string, kind int, paths []string) error {
		for _, raw := range paths {
			abs, err := localPath(raw, h)
			if err != nil {
				return flagErr(flag, "%s: %v", raw, err)
			}
			if kind != mountHide {
				if abs == "/" {
					return flagErr(flag, "/ would share the whole host: name a directory")
				}
				if _, err := os.Stat(abs); err != nil {
					return flagErr(flag, "%s: %v", raw, statReason(err))
				}
			}
			want = append(want, localMount{dest: abs, kind: kind, flag: flag})
		}
		return nil
	}
	// A current directory that holds $HOME shows it anyway.
	homeHidden := !p.Home && h.home != "" && h.home != "/" && !isUnder(h.home, h.cwd, true)
	if homeHidden {
		want = append(want, localMount{dest: h.home, kind: mountHide, flag: "--home"})
	}
	want = append(want, localMount{dest: h.cwd, kind: mountBindRW, flag: "the current directory"})
	if err := add("--rw", mountBindRW, p.RW); err != nil {
		return nil, nil, err
	}
	if err := add("--ro", mountBindRO, p.RO); err != nil {
		return nil, nil, err
	}
	if _, err := os.Stat(h.home); homeHidden && h.keep && err == nil && !underAMount(h.home, want[1:]) {
		want[0].kind = mountHideKept // a home that does not exist has nothing to hide
	}
	var hidden []string
	if h.home != "" && h.home != "/" {
		for _, d := range defaultHidden {
			hidden = append(hidden, filepath.Join(h.home, d))
		}
	}
	hidden = append(hidden, p.Hide...)
	if err := add("--hide", mountHide, hidden); err != nil {
		return nil, nil, err
	}
	if !isUnder(h.private, "/tmp", false) {
		want = append(want, localMount{dest: h.private, kind: mountHide, flag: "moat's own directory"})
	}
	if h.keptRoot != "" {
		want = append(want, localMount{dest: h.keptRoot, kind: mountHide, flag: "the kept sandboxes"})
	}

	if err := checkMountConflicts(want, h); err != nil {
		return nil, nil, err
	}
	// Parents first: a bind inside a hidden $HOME, a hidden store inside
	// the shared current directory.
	slices.SortStableFunc(want, func(a, b localMount) int { return depth(a.dest) - depth(b.dest) })

	var out []specs.Mount
	var overlayHidden []string
	for i, m := range want {
		switch {
		case m.kind == mountHideKept:
			overlayHidden = append(overlayHidden, m.dest)
		case m.kind == mountHide && !needsHiding(want[:i], m.dest):
		default:
			out = append(out, m.spec(h))
		}
	}
	return out, overlayHidden, nil
}

// underAMount reports whether path lies inside one of the shared paths
// of mounts or a file system of the sandbox's own (/tmp...), which would
// cover what the overlay holds there.
func underAMount(path string, mounts []localMount) bool {
	for _, m := range localBaseMounts() {
		if isUnder(path, m.Destination, true) || isUnder(path, "/dev", true) {
			return true
		}
	}
	for _, m := range mounts {
		if !m.hides() && isUnder(path, m.dest, true) {
			return true
		}
	}
	return false
}

// checkMountConflicts refuses a path the policy names twice in different
// ways, and a shared path inside a hidden credential store: what the user
// meant is not clear, and the safe reading would silently drop a flag.
func checkMountConflicts(want []localMount, h localHost) error {
	for i, a := range want {
		for _, b := range want[:i] {
			if a.dest == b.dest && a.kind != b.kind {
				if a.hides() {
					a, b = b, a // the shared path is the one to move
				}
				return flagErr(a.flag, "%s is also given to %s", a.dest, b.flag)
			}
			if !a.hides() && b.hides() && b.dest != h.home && isUnder(a.dest, b.dest, true) {
				return flagErr(a.flag, "%s is inside %s, which is hidden (--hide)", a.dest, b.dest)
			}
			if a.hides() && !b.hides() && a.dest != h.home && isUnder(b.dest, a.dest, false) {
				return flagErr(b.flag, "%s is inside %s, which is hidden (--hide)", b.dest, a.dest)
			}
		}
	}
	return nil
}

// needsHiding reports whether a hide of dest does anything after the
// mounts before it: dest exists on the host, and the nearest of those
// mounts above it is not already an empty one. (A missing path has nothing
// to hide, and making its mount point inside a bind mount would write to
// the host.)
func needsHiding(before []localMount, dest string) bool {
	if _, err := os.Lstat(dest); err != nil {
		return false
	}
	nearest := -1
	for i, m := range before {
		if isUnder(dest, m.dest, true) && (nearest < 0 || depth(m.dest) >= depth(before[nearest].dest)) {
			nearest = i
		}
	}
	return nearest < 0 || !before[nearest].hides()
}

func (m localMount) spec(h localHost) specs.Mount {
	switch m.kind {
	case mountBindRW:
		return specs.Mount{Destination: m.dest, Type: "bind", Source: m.dest, Options: []string{"rbind", "rw", "nosuid", "nodev"}}
	case mountBindRO:
		return specs.Mount{Destination: m.dest, Type: "bind", Source: m.dest, Options: []string{"rbind", "ro", "nosuid", "nodev"}}
	}
	if info, err := os.Stat(m.dest); err == nil && !info.IsDir() {
		// A hidden file reads as empty: the run's own empty file over it.
		return specs.Mount{Destination: m.dest, Type: "bind", Source: h.emptyFile, Options: []string{"bind", "ro", "nosuid", "nodev"}}
	}
	// The caller owns the empty directory, as they owned what it hides:
	// a tool may still write ~/.cache there, into the sandbox's memory.
	return specs.Mount{Destination: m.dest, Type: "tmpfs", Source: "tmpfs",
		Options: []string{"nosuid", "nodev", "mode=0755", fmt.Sprintf("uid=%d", h.uid), fmt.Sprintf("gid=%d", h.gid)}}
}

// localPath makes a policy path absolute: ~ and ~/ are the caller's home,
// a relative path is relative to the current directory.
func localPath(raw string, h localHost) (string, error) {
	switch {
	case raw == "":
		return "", errors.New("empty path")
	case raw == "~" || strings.HasPrefix(raw, "~/"):
		if h.home == "" {
			return "", errors.New("~ with no home directory")
		}
		raw = filepath.Join(h.home, raw[1:])
	case !filepath.IsAbs(raw):
		raw = filepath.Join(h.cwd, raw)
	}
	return filepath.Clean(raw), nil
}

// statReason is why a path cannot be shared, without the path, which the
// message already names.
func statReason(err error) string {
	if errors.Is(err, fs.ErrNotExist) {
		return "no such file or directory"
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}

// isUnder reports whether path is inside dir, or is dir itself if orSame.
func isUnder(path, dir string, orSame bool) bool {
	if path == dir {
		return orSame
	}
	return dir == "/" || strings.HasPrefix(path, dir+"/")
}

func depth(path string) int {
	if path == "/" {
		return 0
	}
	return strings.Count(path, "/")
}

// localEnv is the sandbox's environment: the safe variables of the
// caller's, then each --env, last one winning.
func localEnv(given []string, h localHost) ([]string, error) {
	host := map[string]string{}
	for _, kv := range h.environ {
		if k, v, ok := strings.Cut(kv, "="); ok {
			host[k] = v
		}
	}
	var names []string
	vals := map[string]string{}
	set := func(k, v string) {
		if _, ok := vals[k]; !ok {
			names = append(names, k)
		}
		vals[k] = v
	}
	for _, k := range safeEnv {
		if v, ok := host[k]; ok {
			set(k, v)
		}
	}
	if h.home != "" {
		set("HOME", h.home)
	}
	set("PWD", h.cwd)
	for _, e := range given {
		k, v, hasValue := strings.Cut(e, "=")
		if k == "" || strings.ContainsAny(k, "\x00") {
			return nil, flagErr("--env", "%q: want NAME or NAME=VALUE", e)
		}
		if !hasValue {
			if secretName().MatchString(k) {
				return nil, flagErr("--env", "%s looks like a secret's name: it is passed only with its value, --env %s=VALUE", k, k)
			}
			hv, ok := host[k]
			if !ok {
				continue // as docker run -e NAME: an unset variable stays unset
			}
			v = hv
		}
		set(k, v)
	}
	env := make([]string, 0, len(names))
	for _, k := range names {
		env = append(env, k+"="+vals[k])
	}
	return env, nil
}

// localResources are the limits of linux.resources: --memory (default
// half the host's memory), --cpus (default none) and --pids (default
// defaultPIDs). Rootless, there are no defaults: a user may usually make
// no cgroup to hold them (cmd/moat/cgroup.go), and asking for a limit
// then fails the run.
func localResources(p localPolicy, h localHost) (*specs.LinuxResources, error) {
	r := &specs.LinuxResources{}
	var memory int64
	if h.uid == 0 {
		memory = h.memTotal / 2
	}
	if p.Memory != "" {
		n, err := parseBytes(p.Memory)
		if err != nil {
			return nil, flagErr("--memory", "%v", err)
		}
		memory = n
	}
	if memory > 0 {
		r.Memory = &specs.LinuxMemory{Limit: &memory}
	}
	switch {
	case p.CPUs < 0 || math.IsNaN(p.CPUs) || math.IsInf(p.CPUs, 0):
		return nil, flagErr("--cpus", "%v: want a positive number of CPUs", p.CPUs)
	case p.CPUs > 0:
		const period = 100000 // the CFS period, in microseconds, that docker --cpus uses
		quota := int64(math.Ceil(p.CPUs * period))
		r.CPU = &specs.LinuxCPU{Period: ptr(uint64(period)), Quota: &quota}
	}
	var pids int64
	if h.uid == 0 {
		pids = defaultPIDs
	}
	if p.PIDs < 0 {
		return nil, flagErr("--pids", "%d: want a positive number", p.PIDs)
	}
	if p.PIDs > 0 {
		pids = p.PIDs
	}
	if pids > 0 {
		r.Pids = &specs.LinuxPids{Limit: &pids}
	}
	return r, nil
}

func ptr[T any](v T) *T { return &v }

// localTimeout reads --timeout: a Go duration or a number of seconds; ""
// is none.
func localTimeout(v string) (time.Duration, error) {
	if v == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		secs, serr := strconv.ParseFloat(v, 64)
		if serr != nil {
			return 0, flagErr("--timeout", "%q: want a duration (90s, 10m) or a number of seconds", v)
		}
		d = time.Duration(secs * float64(time.Second))
	}
	if d <= 0 {
		return 0, flagErr("--timeout", "%q: want a positive duration", v)
	}
	return d, nil
}
