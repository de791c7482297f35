// Package sysfs is the sandbox's /sys: the few files programs read to
// learn the machine (the CPUs, transparent huge pages), always read-only.
// It shows nothing of the host but the CPUs the sentry may use and the
// host's transparent huge page settings; every write fails with EROFS.
package sysfs

import (
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/sentry/vfs"
)

// New returns the root dentry of a /sys made now, for a guest with cpus
// CPUs.
//
//	devices/system/cpu/{online,possible,present,offline} and cpu0/ to cpuN-1/
//	fs/cgroup/ (empty: the mount point of the cgroup mount, cgroup.go)
//	kernel/mm/transparent_hugepage/{enabled,defrag,hpage_pmd_size}
//	class/, bus/, block/, dev/, firmware/, module/, power/ (empty)
func New(numCPUs int) *vfs.Dentry {
	t := &tree{dev: vfs.NewAnonDev(), made: time.Now()}
	n := max(numCPUs, 1)
	cpus := cpuRange(n)
	var cpuDirs []entry
	for i := 0; i < n; i++ {
		cpuDirs = append(cpuDirs, t.dir(fmt.Sprintf("cpu%d", i)))
	}
	root := t.dir("",
		t.dir("devices", t.dir("system", t.dir("cpu", append(cpuDirs,
			// The guest's CPUs, as its sched_getaffinity numbers
			// them, none offline.
			t.file("online", cpus), t.file("possible", cpus), t.file("present", cpus),
			t.file("offline", ""))...))),
		t.dir("fs", t.dir("cgroup")),
		t.dir("kernel", t.dir("mm", t.dir("transparent_hugepage",
			t.file("enabled", hostTHP("enabled", "always [madvise] never")),
			t.file("defrag", hostTHP("defrag", "always defer defer+madvise [madvise] never")),
			t.file("hpage_pmd_size", "2097152")))),
		t.dir("class"), t.dir("bus"), t.dir("block"), t.dir("dev"), t.dir("firmware"), t.dir("module"),
		t.dir("power"),
	)
	number(root.node)
	return vfs.NewRoot(root.node)
}

// number gives the tree's nodes their inode numbers, in the order a walk
// meets them: the same in every /sys.
func number(root *node) {
	next := uint64(1)
	var walk func(n *node)
	walk = func(n *node) {
		n.ino = next
		next++
		for _, c := range n.children {
			walk(c.node)
		}
	}
	walk(root)
}

// hostTHP is the host's setting of transparent huge pages named file
// ("always [madvise] never": the one in force in brackets), which the
// sentry's memory follows; def where the host has none to read.
func hostTHP(file, def string) string {
	if v, ok := hostTHPFiles()[file]; ok {
		return v
	}
	return def
}

// hostTHPFiles are the host's settings hostTHP shows, read once, by
// ReadHostFiles, before the sentry confines itself: a confined sentry
// opens no file.
var hostTHPFiles = sync.OnceValue(func() map[string]string {
	m := make(map[string]string)
	for _, file := range []string{"enabled", "defrag"} {
		b, err := os.ReadFile("/sys/kernel/mm/transparent_hugepage/" + file)
		if err == nil && strings.Contains(string(b), "[") {
			m[file] = strings.TrimSuffix(string(b), "\n")
		}
	}
	return m
})

// ReadHostFiles reads what /sys shows of the host's files.
func ReadHostFiles() { hostTHPFiles() }

// tree is one sysfs instance.
type tree struct {
	dev  uint64
	made time.Time
}

// entry is a named node of a directory.
type entry struct {
	name string
	node *node
}

// node is a sysfs inode: a directory or a file of fixed content.
type node struct {
	t        *tree
	ino      uint64
	children []entry // directories
	content  string  // files, without the final newline
	// gen, if set, makes a file's content when it is opened (the cgroup
	// files, whose figures change).
	gen   func() string
	isDir bool
}

func (t *tree) dir(name string, children ...entry) entry {
	return entry{name, &node{t: t, isDir: true, children: children}}
}

func (t *tree) file(name, content string) entry {
	return entry{name, &node{t: t, content: content}}
}

// Stat implements vfs.Inode: directories 0755, files 0444 and 4096 bytes,
// as sysfs reports every attribute's size.
func (n *node) Stat() (vfs.Stat, error) {
	ts, _ := unix.TimeToTimespec(n.t.made)
	st := vfs.Stat{Dev: n.t.dev, Ino: n.ino, Mode: unix.S_IFREG | 0o444, Nlink: 1, Size: 4096, Blksize: 4096,
		Atime: ts, Mtime: ts, Ctime: ts}
	if n.isDir {
		st.Mode, st.Nlink, st.Size = unix.S_IFDIR|0o755, 2, 0
		for _, c := range n.children {
			if c.node.isDir {
				st.Nlink++
			}
		}
	}
	return st, nil
}

// Lookup implements vfs.Inode.
func (n *node) Lookup(name string) (vfs.Inode, error) {
	if !n.isDir {
		return nil, unix.ENOTDIR
	}
	for _, c := range n.children {
		if c.name == name {
			return c.node, nil
		}
	}
	return nil, unix.ENOENT
}

// ReadDir implements vfs.Inode.
func (n *node) ReadDir() ([]vfs.Dirent, error) {
	if !n.isDir {
		return nil, unix.ENOTDIR
	}
	out := make([]vfs.Dirent, len(n.children))
	for i, c := range n.children {
		typ := uint8(unix.DT_REG)
		if c.node.isDir {
			typ = unix.DT_DIR
		}
		out[i] = vfs.Dirent{Name: c.name, Ino: c.node.ino, Type: typ}
	}
	return out, nil
}

// Readlink implements vfs.Inode: sysfs here has no symlinks.
func (n *node) Readlink() (string, error) { return "", unix.EINVAL }

// Open implements vfs.Inode. Nothing is writable (EROFS), whatever the
// mount says.
func (n *node) Open(flags int) (vfs.FileImpl, error) {
	if flags&unix.O_ACCMODE != unix.O_RDONLY {
		return nil, unix.EROFS
	}
	if n.isDir {
		return &file{node: n}, nil
	}
	content := n.content
	if n.gen != nil {
		content = n.gen()
	}
	return &file{node: n, data: []byte(content + "\n")}, nil
}

// file is an open sysfs file.
type file struct {
	node *node
	data []byte
}

func (f *file) Read(dst *vfs.IOSeq, off int64) (int, error) {
	if off >= int64(len(f.data)) {
		return 0, nil
	}
	return dst.CopyOut(f.data[off:])
}

func (f *file) Write(*vfs.IOSeq, int64) (int, error) { return 0, unix.EBADF }
func (f *file) Stat() (vfs.Stat, error)              { return f.node.Stat() }
func (f *file) Ioctl(uint32, uintptr, vfs.IoctlIO) (uintptr, error) {
	return 0, unix.ENOTTY
}
func (f *file) Release()             {}
func (f *file) Size() (int64, error) { return 4096, nil }
