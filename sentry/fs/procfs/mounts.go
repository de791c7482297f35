package procfs

import (
	"fmt"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/sentry/kernel"
	"github.com/moat-sandbox/moat/sentry/vfs"
)

// /proc/<pid>/mounts and mountinfo, as Linux's fs/proc_namespace.c prints
// them. The sandbox's mounts are private (no propagation), so mountinfo
// has no optional fields.

// mangle escapes a space, tab, newline or backslash as Linux's seq_escape
// does, in octal, so that fields split on blanks.
func mangle(s string) string {
	if !strings.ContainsAny(s, " \t\n\\") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case ' ', '\t', '\n', '\\':
			fmt.Fprintf(&b, "\\%03o", c)
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// mountOptions are a mount's own options, as show_mnt_opts prints them
// after "ro" or "rw": relatime unless noatime or strictatime, Linux's
// default since 2.6.30.
func mountOptions(m vfs.MountInfo) string {
	opts := "rw"
	if m.Flags&unix.MS_RDONLY != 0 {
		opts = "ro"
	}
	for _, o := range []struct {
		on   bool
		name string
	}{
		{m.Flags&unix.MS_NOSUID != 0, "nosuid"}, {m.Flags&unix.MS_NODEV != 0, "nodev"},
		{m.Flags&unix.MS_NOEXEC != 0, "noexec"}, {m.Flags&unix.MS_NOATIME != 0, "noatime"},
		{m.Flags&unix.MS_NODIRATIME != 0, "nodiratime"},
		{m.Flags&(unix.MS_NOATIME|unix.MS_STRICTATIME) == 0, "relatime"},
	} {
		if o.on {
			opts += "," + o.name
		}
	}
	return opts
}

// superOptions are the file system's flags, as show_sb_opts prints them.
func superOptions(m vfs.MountInfo) string {
	var opts string
	for _, o := range []struct {
		flag int
		name string
	}{{unix.MS_SYNCHRONOUS, "sync"}, {unix.MS_DIRSYNC, "dirsync"}, {unix.MS_MANDLOCK, "mand"}, {unix.MS_LAZYTIME, "lazytime"}} {
		if m.Flags&o.flag != 0 {
			opts += "," + o.name
		}
	}
	return opts
}

func data(m vfs.MountInfo) string {
	if m.Data == "" {
		return ""
	}
	return "," + m.Data
}

// mounts is /proc/<pid>/mounts: "source point type options 0 0", the
// options the mount's read-only state, the file system's flags, the
// mount's own and the file system's options.
func mounts(t *kernel.Task) ([]byte, error) {
	root, _ := t.FS().Get()
	var b strings.Builder
	for _, m := range vfs.Mounts(root) {
		rw := "rw"
		if m.Flags&unix.MS_RDONLY != 0 || m.SuperRO {
			rw = "ro"
		}
		opts := rw + superOptions(m) + strings.TrimPrefix(strings.TrimPrefix(mountOptions(m), "rw"), "ro") + data(m)
		fmt.Fprintf(&b, "%s %s %s %s 0 0\n", mangle(m.Source), mangle(m.Path), mangle(m.Type), opts)
	}
	return []byte(b.String()), nil
}

// mountinfo is /proc/<pid>/mountinfo: "id parent major:minor root point
// options - type source superoptions".
func mountinfo(t *kernel.Task) ([]byte, error) {
	root, _ := t.FS().Get()
	var b strings.Builder
	for _, m := range vfs.Mounts(root) {
		super := "rw"
		if m.SuperRO {
			super = "ro"
		}
		fmt.Fprintf(&b, "%d %d %d:%d %s %s %s - %s %s %s%s%s\n", m.ID, m.ParentID, unix.Major(m.Dev), unix.Minor(m.Dev),
			mangle(m.Root), mangle(m.Path), mountOptions(m), mangle(m.Type), mangle(m.Source), super, superOptions(m), data(m))
	}
	return []byte(b.String()), nil
}
