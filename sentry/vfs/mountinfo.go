package vfs

import (
	"path"
	"sort"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// What /proc/<pid>/mounts and mountinfo say about each mount: the facts
// Linux keeps in a vfsmount and its superblock that the sentry's tree has
// no other use for.

// mountMeta is a mount's identity and description.
type mountMeta struct {
	id int32
	// outsideID is the parent id a root mount reports: one no listed mount
	// has, as a container's root reports a parent outside its namespace.
	outsideID int32
	source    string // the mount's source, "none" if it has none
	data      string // the file system's options, for the super options
	// superRO is whether the file system itself is read-only (a mount made
	// with MS_RDONLY); a read-only bind of a writable tree is not.
	superRO bool
	// hostRoot is, for a file system the gofer serves from a host
	// directory, that directory's path within the host file system that
	// holds it: mountinfo shows the mount's root under it, as Linux shows
	// a bind mount's.
	hostRoot string
}

var lastMountID atomic.Int32

func newMountMeta(root bool, flags int) mountMeta {
	m := mountMeta{source: "none", superRO: flags&unix.MS_RDONLY != 0}
	if root {
		m.outsideID = lastMountID.Add(1)
	}
	m.id = lastMountID.Add(1)
	return m
}

// SetSource records the mount's source and file-system options (tmpfs's
// "size=65536k,mode=755"), as mount(2) was given them; they are shown and
// mean nothing else. Call it before the mount is reachable.
func (m *Mount) SetSource(source, data string) {
	if source == "" {
		source = "none"
	}
	m.meta.source, m.meta.data = source, data
}

// SetHostRoot records that the mount's file system is the host directory
// at root within its host file system (see mountMeta.hostRoot).
func (m *Mount) SetHostRoot(root string) { m.meta.hostRoot = root }

// ID is the mount's id in /proc/<pid>/mountinfo.
func (m *Mount) ID() int32 { return m.meta.id }

// MountInfo describes one mount for /proc/<pid>/mounts and mountinfo.
type MountInfo struct {
	ID, ParentID int32
	Dev          uint64 // the file system's device number
	Root         string // the mount's root within its file system
	Path         string // the mount point, seen from the reader's root
	Type         string
	Source       string
	Flags        int  // the mount's MS_* flags
	SuperRO      bool // the file system is read-only
	Data         string
}

// Mounts lists the mounts of the tree under root in the order they were
// made, which puts parents before children, as Linux lists a namespace's
// mounts. Mounts hidden by later ones on the same point are listed too.
func Mounts(root Path) []MountInfo {
	all := mountsUnder(root)
	out := make([]MountInfo, len(all))
	for i, m := range all {
		parent := m.meta.outsideID
		if m.parent != nil {
			parent = m.parent.meta.id
		}
		var dev uint64
		if st, err := m.root.inode.Stat(); err == nil {
			dev = st.Dev
		}
		fsRoot := fsPath(m.root)
		if m.meta.hostRoot != "" {
			fsRoot = path.Join(m.meta.hostRoot, fsRoot)
		}
		out[i] = MountInfo{ID: m.meta.id, ParentID: parent, Dev: dev, Root: fsRoot,
			Path: PathName(m.Root(), root), Type: m.Type, Source: m.meta.source, Flags: m.Flags,
			SuperRO: m.meta.superRO, Data: m.meta.data}
	}
	return out
}

// mountsUnder lists the mounts of the tree under root, by id.
func mountsUnder(root Path) []*Mount {
	var all []*Mount
	var walk func(m *Mount)
	walk = func(m *Mount) {
		all = append(all, m)
		m.mu.Lock()
		children := make([]*Mount, 0, len(m.children))
		for _, c := range m.children {
			children = append(children, c)
		}
		m.mu.Unlock()
		for _, c := range children {
			walk(c)
		}
	}
	walk(root.Mount)
	sort.Slice(all, func(i, j int) bool { return all[i].meta.id < all[j].meta.id })
	return all
}

// MountOfDevice returns the root of the first mount under root whose file
// system has device number dev, as ustat(2) looks a superblock up.
func MountOfDevice(root Path, dev uint64) (Path, bool) {
	for _, m := range mountsUnder(root) {
		if st, err := m.root.inode.Stat(); err == nil && st.Dev == dev {
			return m.Root(), true
		}
	}
	return Path{}, false
}

// FilesystemTypes are the file system types of the sandbox's tree, in
// the order /proc/filesystems and sysfs(2) list them; none has a device.
var FilesystemTypes = []string{"sysfs", "tmpfs", "proc", "cgroup2", "devtmpfs", "overlay", "mqueue", "9p"}

// fsPath is d's path from the root of its file system.
func fsPath(d *Dentry) string {
	renameMu.RLock()
	defer renameMu.RUnlock()
	var parts []string
	for ; d.parent != nil; d = d.parent {
		parts = append(parts, d.name)
	}
	if len(parts) == 0 {
		return "/"
	}
	s := ""
	for i := len(parts) - 1; i >= 0; i-- {
		s += "/" + parts[i]
	}
	return s
}

var anonMountID = sync.OnceValue(func() int32 { return lastMountID.Add(1) })

// AnonMountID is the mount id of files outside every tree (pipes, eventfds,
// epolls): Linux's pipefs and anon_inodefs are mounts no namespace lists,
// and fdinfo names them by an id of their own.
func AnonMountID() int32 { return anonMountID() }
