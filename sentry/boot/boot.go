// Package boot assembles a sandbox's sentry from what `moat create` hands
// over: the memory file and platform, the file system tree (the gofer's
// rootfs with /dev on top), the kernel with its syscall table and the init
// process; then it serves the control socket until the guest is done. It
// is the only package that knows every part of the sentry.
package boot

import (
	"encoding/binary"
	"fmt"
	"os"
	"path"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/gofer"
	"github.com/moat-sandbox/moat/internal/bundle"
	"github.com/moat-sandbox/moat/internal/control"
	"github.com/moat-sandbox/moat/platform/systrap"
	"github.com/moat-sandbox/moat/sentry/fs/devfs"
	"github.com/moat-sandbox/moat/sentry/fs/goferfs"
	"github.com/moat-sandbox/moat/sentry/fs/overlay"
	"github.com/moat-sandbox/moat/sentry/fs/procfs"
	"github.com/moat-sandbox/moat/sentry/fs/tmpfs"
	"github.com/moat-sandbox/moat/sentry/kernel"
	"github.com/moat-sandbox/moat/sentry/memfile"
	"github.com/moat-sandbox/moat/sentry/vfs"
	"github.com/moat-sandbox/moat/syscalls"
)

// Sandbox is a booted sentry, ready to start its init.
type Sandbox struct {
	Kernel *kernel.Kernel
	log    func(string, ...any)
}

// New builds the sandbox that setup describes, with the gofer on goferFD
// and the guest's stdio on fds 0, 1 and 2. An *kernel.InitError is a
// problem with the configuration; other errors are the sentry's.
func New(setup *control.Setup, goferFD int, log func(string, ...any)) (*Sandbox, error) {
	spec := setup.Spec
	if spec == nil || spec.Process == nil || spec.Root == nil {
		return nil, fmt.Errorf("setup has no process or root")
	}
	hw, err := readAuxv()
	if err != nil {
		return nil, err
	}
	mf, err := memfile.New()
	if err != nil {
		return nil, err
	}
	plat, err := systrap.New(mf.FD())
	if err != nil {
		return nil, err
	}
	root, procs, err := buildTree(setup, gofer.NewClient(goferFD), mf, log)
	if err != nil {
		return nil, err
	}
	hostname := spec.Hostname
	if hostname == "" {
		hostname = "localhost"
	}
	k, err := kernel.New(kernel.Config{Platform: plat, MemFile: mf, Syscalls: syscalls.NewTable(), Root: root,
		Hostname: hostname, HWCap: hw.hwcap, HWCap2: hw.hwcap2, MinSigStackSize: hw.minSigStk, Log: log})
	if err != nil {
		return nil, err
	}
	for _, m := range procs {
		if err := mountAt(root, m.dest, procfs.New(k), "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC); err != nil {
			return nil, err
		}
	}
	init, err := initSpec(spec.Process)
	if err != nil {
		return nil, err
	}
	if init.Stdio, err = stdioFiles(); err != nil {
		return nil, err
	}
	if err := k.CreateInit(init); err != nil {
		return nil, err
	}
	return &Sandbox{Kernel: k, log: log}, nil
}

// hostCPU are the facts about the CPU that a new program's auxiliary
// vector carries; they are the sentry's own, read once at boot.
type hostCPU struct {
	hwcap, hwcap2, minSigStk uint64
}

func readAuxv() (hostCPU, error) {
	b, err := os.ReadFile("/proc/self/auxv")
	if err != nil {
		return hostCPU{}, fmt.Errorf("read the sentry's auxiliary vector: %w", err)
	}
	var h hostCPU
	for i := 0; i+16 <= len(b); i += 16 {
		v := binary.LittleEndian.Uint64(b[i+8:])
		switch binary.LittleEndian.Uint64(b[i:]) {
		case 16: // AT_HWCAP
			h.hwcap = v
		case 26: // AT_HWCAP2
			h.hwcap2 = v
		case 51: // AT_MINSIGSTKSZ
			h.minSigStk = v
		}
	}
	return h, nil
}

// buildTree mounts the root file system at /, devfs at /dev, and the
// config's mounts in its order: bind mounts through their gofer sockets,
// tmpfs, and proc once the kernel exists. Other mount types are not
// supported yet and are logged.
func buildTree(setup *control.Setup, c *gofer.Client, mf *memfile.File, log func(string, ...any)) (vfs.Path, []procMount, error) {
	spec := setup.Spec
	root, err := mountRoot(spec.Root.Readonly, setup.RootfsWrites, c, mf)
	if err != nil {
		return vfs.Path{}, nil, fmt.Errorf("mount the root file system: %w", err)
	}
	now, _ := unix.TimeToTimespec(timeNow())
	if err := mountAt(root, "/dev", devfs.New(now), "devtmpfs", unix.MS_NOSUID); err != nil {
		return vfs.Path{}, nil, err
	}
	bindFD := make(map[int]int, len(setup.Binds))
	for j, index := range setup.Binds {
		bindFD[index] = control.BootBindFD0 + j
	}
	var procs []procMount
	for i, m := range spec.Mounts {
		switch fd, isBind := bindFD[i]; {
		case isBind:
			if err := mountBind(root, m.Destination, m.Options, gofer.NewClient(fd), mf); err != nil {
				return vfs.Path{}, nil, err
			}
		case m.Destination == "/dev":
		case m.Type == "proc":
			procs = append(procs, procMount{m.Destination})
		case m.Type == "tmpfs":
			if err := mountTmpfs(root, m.Destination, m.Options, mf, log); err != nil {
				return vfs.Path{}, nil, err
			}
		default:
			log("mount of %s at %s is not supported yet: skipped", m.Type, m.Destination)
		}
	}
	return root, procs, nil
}

// mountRoot makes the root file system: the image through the gofer, alone
// if it is read-only or written through to the host, else under an overlay
// whose upper layer is a tmpfs (the default: the image is never written). An
// image that does not change has its files' pages cached in mf.
func mountRoot(readonly bool, writes string, c *gofer.Client, mf *memfile.File) (vfs.Path, error) {
	if !readonly && writes == bundle.WritesHost {
		d, err := goferfs.New(c, mf, false)
		if err != nil {
			return vfs.Path{}, err
		}
		return vfs.NewRootMount(d, "9p", 0).Root(), nil
	}
	image, err := goferfs.New(c, mf, true)
	if err != nil {
		return vfs.Path{}, err
	}
	if readonly {
		return vfs.NewRootMount(image, "9p", unix.MS_RDONLY).Root(), nil
	}
	upper := tmpfs.New(mf, tmpfs.DefaultOptions())
	d, err := overlay.New(image, upper)
	if err != nil {
		return vfs.Path{}, err
	}
	return vfs.NewRootMount(d, "overlay", 0).Root(), nil
}

// mountBind mounts the host tree a gofer socket serves at dest, with the
// OCI mount's flags (ro, nosuid, nodev, noexec). Its files' pages are
// cached only while mapped: the host may change a bind-mounted tree
// behind the sandbox.
func mountBind(root vfs.Path, dest string, options []string, c *gofer.Client, mf *memfile.File) error {
	d, err := goferfs.New(c, mf, false)
	if err != nil {
		return fmt.Errorf("mounts: bind mount at %s: %w", dest, err)
	}
	flags, _ := mountFlags(options)
	return mountAt(root, dest, d, fsTypeOf(d), flags)
}

// fsTypeOf names the host file system under a gofer tree, for /proc/mounts,
// as Linux names a bind mount's by its source's.
func fsTypeOf(d *vfs.Dentry) string {
	if s, ok := d.Inode().(vfs.FSStater); ok {
		if st, err := s.StatFS(); err == nil {
			if name, ok := fsNames[st.Type]; ok {
				return name
			}
		}
	}
	return "9p"
}

// fsNames are the statfs magic numbers of file systems a bind mount's
// source is commonly on.
var fsNames = map[int64]string{
	unix.EXT4_SUPER_MAGIC: "ext4", unix.TMPFS_MAGIC: "tmpfs", unix.XFS_SUPER_MAGIC: "xfs",
	unix.BTRFS_SUPER_MAGIC: "btrfs", unix.OVERLAYFS_SUPER_MAGIC: "overlay", unix.NFS_SUPER_MAGIC: "nfs",
	unix.V9FS_MAGIC: "9p", unix.FUSE_SUPER_MAGIC: "fuse",
}

// mountTmpfs mounts a new tmpfs at dest with the OCI mount's options.
func mountTmpfs(root vfs.Path, dest string, options []string, mf *memfile.File, log func(string, ...any)) error {
	flags, data := mountFlags(options)
	opts, unknown, err := tmpfs.ParseOptions(data)
	if err != nil {
		return &kernel.InitError{Msg: fmt.Sprintf("mounts: tmpfs at %s: %v", dest, err)}
	}
	if len(unknown) > 0 {
		log("tmpfs at %s: options %q ignored", dest, unknown)
	}
	return mountAt(root, dest, tmpfs.New(mf, opts), "tmpfs", flags)
}

// mountFlags splits mount(8) options into MS_* flags and the rest, the
// file system's own data. Propagation and bind options mean nothing to a
// tree no one else sees, and are dropped.
func mountFlags(options []string) (int, []string) {
	set := map[string]int{"ro": unix.MS_RDONLY, "nosuid": unix.MS_NOSUID, "nodev": unix.MS_NODEV,
		"noexec": unix.MS_NOEXEC, "sync": unix.MS_SYNCHRONOUS, "dirsync": unix.MS_DIRSYNC,
		"noatime": unix.MS_NOATIME, "nodiratime": unix.MS_NODIRATIME, "relatime": unix.MS_RELATIME,
		"strictatime": unix.MS_STRICTATIME, "mand": unix.MS_MANDLOCK, "lazytime": unix.MS_LAZYTIME}
	unset := map[string]int{"rw": unix.MS_RDONLY, "suid": unix.MS_NOSUID, "dev": unix.MS_NODEV,
		"exec": unix.MS_NOEXEC, "async": unix.MS_SYNCHRONOUS, "atime": unix.MS_NOATIME,
		"diratime": unix.MS_NODIRATIME, "norelatime": unix.MS_RELATIME, "nostrictatime": unix.MS_STRICTATIME,
		"nomand": unix.MS_MANDLOCK, "nolazytime": unix.MS_LAZYTIME}
	flags := 0
	var data []string
	for _, o := range options {
		if f, ok := set[o]; ok {
			flags |= f
		} else if f, ok := unset[o]; ok {
			flags &^= f
		} else {
			switch o {
			case "defaults", "bind", "rbind", "private", "rprivate", "shared", "rshared", "slave", "rslave",
				"unbindable", "runbindable", "tmpcopyup", "notmpcopyup":
			default:
				data = append(data, o)
			}
		}
	}
	return flags, data
}

// procMount is a /proc to mount once the kernel exists.
type procMount struct{ dest string }

// mountAt attaches a file system at dest (an absolute path whose parent
// exists), making the mount point if the image lacks it: a directory, or a
// file for a file system that is one file.
func mountAt(root vfs.Path, dest string, fsRoot *vfs.Dentry, fsType string, flags int) error {
	dest = path.Clean(dest)
	if dest == "/" {
		return fmt.Errorf("mount at /: only the root file system goes there")
	}
	parent, err := vfs.Resolver{Root: root, Start: root}.Lookup(path.Dir(dest), true)
	if err != nil {
		return fmt.Errorf("mount %s at %s: %w", fsType, dest, err)
	}
	point, err := vfs.MakeMountPoint(parent, path.Base(dest), fsRoot.IsDir())
	if err != nil {
		return fmt.Errorf("mount %s at %s: %w", fsType, dest, err)
	}
	if _, err := vfs.Attach(point, fsRoot, fsType, flags); err != nil {
		return fmt.Errorf("mount %s at %s: %w", fsType, dest, err)
	}
	return nil
}
