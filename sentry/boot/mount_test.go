package boot

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/sentry/fs/tmpfs"
	"github.com/moat-sandbox/moat/sentry/memfile"
	"github.com/moat-sandbox/moat/sentry/vfs"
)

func TestMountFlagsSplitsOptionsAsMount8Does(t *testing.T) {
	// Each option sets or clears its MS_* flag in order, so the later of
	// two opposites wins (util-linux's libmount and runc alike); the
	// options no flag stands for are the file system's data, in order.
	for _, c := range []struct {
		opts  []string
		flags int
		data  []string
	}{
		{nil, 0, nil},
		{[]string{"ro"}, unix.MS_RDONLY, nil},
		{[]string{"ro", "rw"}, 0, nil},
		{[]string{"rw", "ro"}, unix.MS_RDONLY, nil},
		{[]string{"nosuid", "nodev", "noexec"}, unix.MS_NOSUID | unix.MS_NODEV | unix.MS_NOEXEC, nil},
		{[]string{"nosuid", "suid", "nodev", "dev", "noexec", "exec"}, 0, nil},
		{[]string{"sync", "dirsync"}, unix.MS_SYNCHRONOUS | unix.MS_DIRSYNC, nil},
		{[]string{"sync", "async"}, 0, nil},
		{[]string{"noatime", "nodiratime"}, unix.MS_NOATIME | unix.MS_NODIRATIME, nil},
		{[]string{"noatime", "atime", "nodiratime", "diratime"}, 0, nil},
		{[]string{"relatime"}, unix.MS_RELATIME, nil},
		{[]string{"relatime", "norelatime"}, 0, nil},
		{[]string{"strictatime"}, unix.MS_STRICTATIME, nil},
		{[]string{"strictatime", "nostrictatime"}, 0, nil},
		{[]string{"mand", "lazytime"}, unix.MS_MANDLOCK | unix.MS_LAZYTIME, nil},
		{[]string{"mand", "nomand", "lazytime", "nolazytime"}, 0, nil},
		// "defaults" is no flag; the rest are about propagation and
		// binding, which a tree no other namespace sees does not have.
		{[]string{"ro", "defaults"}, unix.MS_RDONLY, nil},
		{[]string{"bind", "rbind", "private", "rprivate", "shared", "rshared", "slave", "rslave", "unbindable",
			"runbindable", "tmpcopyup", "notmpcopyup"}, 0, nil},
		{[]string{"nosuid", "size=64m", "ro", "mode=1777", "nr_inodes=1k"}, unix.MS_NOSUID | unix.MS_RDONLY,
			[]string{"size=64m", "mode=1777", "nr_inodes=1k"}},
	} {
		flags, data := mountFlags(c.opts)
		if flags != c.flags || !slices.Equal(data, c.data) {
			t.Errorf("%q: flags %#x, data %q; want %#x, %q", c.opts, flags, data, c.flags, c.data)
		}
	}
}

// One memory file serves the test binary's file systems.
var (
	memOnce sync.Once
	mem     *memfile.File
	memErr  error
)

func memFile(t *testing.T) *memfile.File {
	t.Helper()
	memOnce.Do(func() { mem, memErr = memfile.New() })
	if memErr != nil {
		t.Fatalf("memory file: %v", memErr)
	}
	return mem
}

// tmpfsRoot is a tree to mount on: a tmpfs with /etc in it.
func tmpfsRoot(t *testing.T) vfs.Path {
	t.Helper()
	root := vfs.NewRootMount(tmpfs.New(memFile(t), tmpfs.DefaultOptions()), "tmpfs", 0).Root()
	if err := vfs.Mkdir(&vfs.Creds{}, target(t, root, "/etc"), 0o755); err != nil {
		t.Fatal(err)
	}
	return root
}

func target(t *testing.T, root vfs.Path, name string) vfs.Target {
	t.Helper()
	tg, err := vfs.Resolver{Root: root, Start: root}.LookupTarget(name)
	if err != nil {
		t.Fatal(err)
	}
	return tg
}

func lookup(t *testing.T, root vfs.Path, name string) vfs.Path {
	t.Helper()
	p, err := vfs.Resolver{Root: root, Start: root}.Lookup(name, true)
	if err != nil {
		t.Fatalf("lookup %s: %v", name, err)
	}
	return p
}

// logged collects what a function logs.
type logged []string

func (l *logged) log(format string, args ...any) { *l = append(*l, fmt.Sprintf(format, args...)) }

func TestMountTmpfsMountsWithTheOptionsFlagsAndData(t *testing.T) {
	root := tmpfsRoot(t)
	var log logged
	// /run is not in the image: its mount point is made.
	for _, dest := range []string{"/run", "/etc/"} {
		if err := mountTmpfs(root, dest, []string{"nosuid", "nodev", "mode=700", "uid=5", "ro"}, memFile(t), log.log); err != nil {
			t.Fatalf("mount at %s: %v", dest, err)
		}
		p := lookup(t, root, dest)
		if p.Mount == root.Mount || p.Mount.Type != "tmpfs" || p.Mount.Flags != unix.MS_NOSUID|unix.MS_NODEV|unix.MS_RDONLY {
			t.Errorf("%s: mount %+v", dest, p.Mount)
		}
		st, err := p.Dentry.Inode().Stat()
		if err != nil || st.Mode != unix.S_IFDIR|0o700 || st.UID != 5 {
			t.Errorf("%s: root of the tmpfs %+v, %v; want a directory of mode 0700 owned by uid 5", dest, st, err)
		}
	}
	if len(log) != 0 {
		t.Errorf("logged %q", log)
	}
}

func TestMountTmpfsLogsTheOptionsItIgnores(t *testing.T) {
	root := tmpfsRoot(t)
	var log logged
	if err := mountTmpfs(root, "/run", []string{"size=1m", "x-gvfs-hide", "nosymfollow"}, memFile(t), log.log); err != nil {
		t.Fatal(err)
	}
	if len(log) != 1 || !strings.Contains(log[0], "/run") || !strings.Contains(log[0], `"x-gvfs-hide"`) ||
		!strings.Contains(log[0], `"nosymfollow"`) {
		t.Errorf("logged %q", log)
	}
}

func TestMountTmpfsWithABadOptionIsAnInitErrorNamingTheMountAndOption(t *testing.T) {
	for _, opt := range []string{"mode=999", "size=lots", "uid=-1", "mode"} {
		err := mountTmpfs(tmpfsRoot(t), "/run", []string{"nosuid", opt}, memFile(t), (&logged{}).log)
		initErr(t, err, "mounts", "tmpfs at /run", opt)
	}
}

func TestMountAtRefusesTheRoot(t *testing.T) {
	root := tmpfsRoot(t)
	for _, dest := range []string{"/", "//", "/etc/.."} {
		if err := mountTmpfs(root, dest, nil, memFile(t), (&logged{}).log); err == nil {
			t.Errorf("a tmpfs mounted at %s", dest)
		}
	}
}
