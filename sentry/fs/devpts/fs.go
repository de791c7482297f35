// Package devpts is the sandbox's pseudo-terminals: a devpts file system
// (mounted at /dev/pts) whose ptmx node opens a new master and replica
// pair, and whose numbered nodes are the replicas. The pairs and their line
// discipline live entirely in the sentry: no host terminal is ever opened
// for them. Job control (controlling terminals, foreground groups, the
// signals) is the kernel's (kernel.TTY).
package devpts

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/sentry/kernel"
	"github.com/moat-sandbox/moat/sentry/vfs"
)

// Device numbers, as Linux's: /dev/ptmx is 5:2, replicas are major 136
// (UNIX98_PTY_SLAVE_MAJOR).
const (
	ptmxMajor    = 5
	ptmxMinor    = 2
	replicaMajor = 136
)

// Options are the devpts mount options.
type Options struct {
	Mode     uint32 // mode= of new replica nodes
	PtmxMode uint32 // ptmxmode= of the ptmx node
	SetUID   bool   // uid= was given: replicas are owned by UID
	UID      uint32
	SetGID   bool // gid= was given: replicas belong to GID
	GID      uint32
	Max      int // max= ptys at once
}

// Limits on the number of ptys: maxOption is an instance's max= by
// default (NR_UNIX98_PTY_MAX), systemMax the system's (kernel.pty.max's
// default), which the sandbox is.
const (
	maxOption = 1 << 20
	systemMax = 4096
)

// DefaultOptions are Linux's: replicas mode 0600, ptmx 0000, owned by
// their opener.
func DefaultOptions() Options { return Options{Mode: 0o600, Max: maxOption} }

// String is the options as /proc/PID/mountinfo shows them (Linux's
// devpts_show_options).
func (o Options) String() string {
	var b strings.Builder
	if o.SetUID {
		fmt.Fprintf(&b, "uid=%d,", o.UID)
	}
	if o.SetGID {
		fmt.Fprintf(&b, "gid=%d,", o.GID)
	}
	fmt.Fprintf(&b, "mode=%03o,ptmxmode=%03o", o.Mode, o.PtmxMode)
	if o.Max < maxOption {
		fmt.Fprintf(&b, ",max=%d", o.Max)
	}
	return b.String()
}

// RuncOptions are what runc's default configuration mounts /dev/pts with
// (newinstance,ptmxmode=0666,mode=0620,gid=5): the options when a config
// has no devpts mount.
var RuncOptions = []string{"newinstance", "ptmxmode=0666", "mode=0620", "gid=5"}

// ParseOptions reads mount data (mount(8)'s file-system options); options
// devpts does not know are returned, and a bad value is an error.
func ParseOptions(data []string) (opts Options, unknown []string, err error) {
	opts = DefaultOptions()
	for _, o := range data {
		name, val, hasVal := strings.Cut(o, "=")
		num := func(base int, max uint64) (uint64, error) {
			if !hasVal {
				return 0, fmt.Errorf("%s needs a value", name)
			}
			v, err := strconv.ParseUint(val, base, 64)
			if err != nil || v > max {
				return 0, fmt.Errorf("bad %s value %q", name, val)
			}
			return v, nil
		}
		var v uint64
		switch name {
		case "newinstance":
			// Every sandbox's devpts is its own instance.
		case "mode", "ptmxmode":
			if v, err = num(8, 0o7777); err != nil {
				return opts, nil, err
			}
			if name == "mode" {
				opts.Mode = uint32(v) & 0o7777
			} else {
				opts.PtmxMode = uint32(v) & 0o7777
			}
		case "uid", "gid":
			if v, err = num(10, 1<<32-2); err != nil {
				return opts, nil, err
			}
			if name == "uid" {
				opts.SetUID, opts.UID = true, uint32(v)
			} else {
				opts.SetGID, opts.GID = true, uint32(v)
			}
		case "max":
			if v, err = num(10, maxOption); err != nil {
				return opts, nil, err
			}
			opts.Max = int(v)
		default:
			unknown = append(unknown, o)
		}
	}
	return opts, unknown, nil
}

// FS is one devpts instance.
type FS struct {
	dev  uint64
	opts Options
	made unix.Timespec

	mu sync.Mutex
	// pairs are the ptys whose numbers are taken: until both ends are
	// closed. nodes are the replicas' names: until the master is closed.
	pairs map[int]*pair
	nodes map[int]*replicaNode
}

// New returns a devpts instance's root, made at now.
func New(opts Options, now time.Time) *vfs.Dentry {
	ts, _ := unix.TimeToTimespec(now)
	fs := &FS{dev: vfs.NewAnonDev(), opts: opts, made: ts,
		pairs: make(map[int]*pair), nodes: make(map[int]*replicaNode)}
	return vfs.NewRoot(&rootInode{fs})
}

// stat is the attributes of one of the instance's inodes. Inode numbers
// are Linux's: 1 the root, 2 ptmx, N+3 replica N.
func (fs *FS) stat(ino uint64, mode uint32, rdev uint64, uid, gid uint32, ctime unix.Timespec) vfs.Stat {
	nlink := uint64(1)
	if mode&unix.S_IFMT == unix.S_IFDIR {
		nlink = 2
	}
	return vfs.Stat{Dev: fs.dev, Ino: ino, Mode: mode, Rdev: rdev, Nlink: nlink, UID: uid, GID: gid,
		Blksize: 1024, Atime: ctime, Mtime: ctime, Ctime: ctime}
}

// rootInode is the devpts directory.
type rootInode struct{ fs *FS }

// Stat implements vfs.Inode.
func (r *rootInode) Stat() (vfs.Stat, error) {
	return r.fs.stat(1, unix.S_IFDIR|0o755, 0, 0, 0, r.fs.made), nil
}

// Volatile implements vfs.Volatile: replicas come and go with their
// masters, so no name may be cached.
func (r *rootInode) Volatile() bool { return true }

// Lookup implements vfs.Inode.
func (r *rootInode) Lookup(name string) (vfs.Inode, error) {
	if name == "ptmx" {
		return &ptmxInode{r.fs}, nil
	}
	n, err := strconv.Atoi(name)
	if err != nil || n < 0 || strconv.Itoa(n) != name {
		return nil, unix.ENOENT
	}
	r.fs.mu.Lock()
	defer r.fs.mu.Unlock()
	if node, ok := r.fs.nodes[n]; ok {
		return node, nil
	}
	return nil, unix.ENOENT
}

// ReadDir implements vfs.Inode: ptmx, then the replicas in order.
func (r *rootInode) ReadDir() ([]vfs.Dirent, error) {
	out := []vfs.Dirent{{Name: "ptmx", Ino: 2, Type: unix.DT_CHR}}
	r.fs.mu.Lock()
	defer r.fs.mu.Unlock()
	for _, n := range slices.Sorted(maps.Keys(r.fs.nodes)) {
		out = append(out, vfs.Dirent{Name: strconv.Itoa(n), Ino: uint64(n) + 3, Type: unix.DT_CHR})
	}
	return out, nil
}

// Readlink implements vfs.Inode.
func (r *rootInode) Readlink() (string, error) { return "", unix.EINVAL }

// Open implements vfs.Inode: the directory, for listing.
func (r *rootInode) Open(int) (vfs.FileImpl, error) { return dirFile{r}, nil }

// dirFile is the open devpts directory; listing goes through the inode.
type dirFile struct{ r *rootInode }

func (dirFile) Read(*vfs.IOSeq, int64) (int, error)  { return 0, unix.EISDIR }
func (dirFile) Write(*vfs.IOSeq, int64) (int, error) { return 0, unix.EISDIR }
func (d dirFile) Stat() (vfs.Stat, error)            { return d.r.Stat() }
func (dirFile) Ioctl(uint32, uintptr, vfs.IoctlIO) (uintptr, error) {
	return 0, unix.ENOTTY
}
func (dirFile) Release() {}

// ptmxInode is the pty multiplexer: each open makes a new pair.
type ptmxInode struct{ fs *FS }

// Stat implements vfs.Inode.
func (p *ptmxInode) Stat() (vfs.Stat, error) {
	return p.fs.stat(2, unix.S_IFCHR|p.fs.opts.PtmxMode, unix.Mkdev(ptmxMajor, ptmxMinor), 0, 0, p.fs.made), nil
}

func (p *ptmxInode) Lookup(string) (vfs.Inode, error) { return nil, unix.ENOTDIR }
func (p *ptmxInode) ReadDir() ([]vfs.Dirent, error)   { return nil, unix.ENOTDIR }
func (p *ptmxInode) Readlink() (string, error)        { return "", unix.EINVAL }

// Open implements vfs.Inode: a new pair whose replica root owns.
func (p *ptmxInode) Open(flags int) (vfs.FileImpl, error) { return p.open(0, 0) }

// OpenTask implements kernel.TTYOpener: the new replica is owned by the
// caller's fsuid and fsgid unless the mount's uid= and gid= say otherwise.
func (p *ptmxInode) OpenTask(t *kernel.Task, flags int) (vfs.FileImpl, error) {
	c := t.Creds()
	c.Lock()
	uid, gid := c.FSUID, c.FSGID
	c.Unlock()
	return p.open(uid, gid)
}

func (p *ptmxInode) open(uid, gid uint32) (vfs.FileImpl, error) {
	fs := p.fs
	if fs.opts.SetUID {
		uid = fs.opts.UID
	}
	if fs.opts.SetGID {
		gid = fs.opts.GID
	}
	fs.mu.Lock()
	defer fs.mu.Unlock()
	limit := min(fs.opts.Max, systemMax)
	index := 0
	for ; index < limit; index++ {
		if _, taken := fs.pairs[index]; !taken {
			break
		}
	}
	if index >= limit {
		return nil, unix.ENOSPC
	}
	pr := newPair(fs, index)
	pr.tty.SetDriver(pr)
	now, _ := unix.TimeToTimespec(time.Now())
	node := &replicaNode{fs: fs, p: pr, st: fs.stat(uint64(index)+3, unix.S_IFCHR|fs.opts.Mode,
		unix.Mkdev(replicaMajor, uint32(index)), uid, gid, now)}
	fs.pairs[index] = pr
	fs.nodes[index] = node
	st, _ := p.Stat()
	return &Master{p: pr, stat: st}, nil
}

// masterClosed removes the replica's name, and frees the number if no
// replica is open either (Linux's devpts_pty_kill, then the index at the
// pair's final release).
func (fs *FS) masterClosed(p *pair) {
	fs.mu.Lock()
	delete(fs.nodes, p.index)
	fs.mu.Unlock()
	fs.maybeFree(p)
}

// maybeFree frees the pair's number once both ends are closed.
func (fs *FS) maybeFree(p *pair) {
	p.mu.Lock()
	done := p.hungUp && p.replicas == 0
	p.mu.Unlock()
	if !done {
		return
	}
	fs.mu.Lock()
	if fs.pairs[p.index] == p {
		delete(fs.pairs, p.index)
	}
	fs.mu.Unlock()
}

// openReplica opens p's replica for t (nil: the sentry itself); a session
// leader may acquire it as its controlling terminal.
func (fs *FS) openReplica(p *pair, t *kernel.Task, flags int) (vfs.FileImpl, error) {
	admin := t != nil && t.HasCap(unix.CAP_SYS_ADMIN)
	fs.mu.Lock()
	node := fs.nodes[p.index]
	fs.mu.Unlock()
	if node == nil {
		return nil, unix.EIO // the master is gone
	}
	if err := p.openReplica(admin); err != nil {
		return nil, err
	}
	if t != nil {
		p.tty.Opened(t, flags)
	}
	return &Replica{p: p, stat: node.attrs}, nil
}

// replicaNode is /dev/pts/N.
type replicaNode struct {
	fs *FS
	p  *pair
	st vfs.Stat
}

// Stat implements vfs.Inode.
func (n *replicaNode) Stat() (vfs.Stat, error) { return n.st, nil }

// attrs is Stat for the files opened through the node.
func (n *replicaNode) attrs() vfs.Stat { return n.st }

func (n *replicaNode) Lookup(string) (vfs.Inode, error) { return nil, unix.ENOTDIR }
func (n *replicaNode) ReadDir() ([]vfs.Dirent, error)   { return nil, unix.ENOTDIR }
func (n *replicaNode) Readlink() (string, error)        { return "", unix.EINVAL }

// Open implements vfs.Inode (an open on the sentry's own account).
func (n *replicaNode) Open(flags int) (vfs.FileImpl, error) { return n.fs.openReplica(n.p, nil, flags) }

// OpenTask implements kernel.TTYOpener.
func (n *replicaNode) OpenTask(t *kernel.Task, flags int) (vfs.FileImpl, error) {
	return n.fs.openReplica(n.p, t, flags)
}
