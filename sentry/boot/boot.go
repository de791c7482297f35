// Package boot assembles a sandbox's sentry from what `moat create` hands
// over: the memory file and platform, the file system tree (the gofer's
// rootfs with /dev on top), the kernel with its syscall table and the init
// process; then it serves the control socket until the guest is done. It
// is the only package that knows every part of the sentry.
package boot

import (
	"fmt"
	"path"
	"slices"
	"strings"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/gofer"
	"github.com/moat-sandbox/moat/internal/bundle"
	"github.com/moat-sandbox/moat/internal/control"
	"github.com/moat-sandbox/moat/internal/seccomp"
	"github.com/moat-sandbox/moat/platform"
	"github.com/moat-sandbox/moat/platform/kvm"
	"github.com/moat-sandbox/moat/platform/systrap"
	"github.com/moat-sandbox/moat/sentry/fs/devfs"
	"github.com/moat-sandbox/moat/sentry/fs/devpts"
	"github.com/moat-sandbox/moat/sentry/fs/goferfs"
	"github.com/moat-sandbox/moat/sentry/fs/mqueue"
	"github.com/moat-sandbox/moat/sentry/fs/overlay"
	"github.com/moat-sandbox/moat/sentry/fs/procfs"
	"github.com/moat-sandbox/moat/sentry/fs/sysfs"
	"github.com/moat-sandbox/moat/sentry/fs/tmpfs"
	"github.com/moat-sandbox/moat/sentry/kernel"
	"github.com/moat-sandbox/moat/sentry/memfile"
	"github.com/moat-sandbox/moat/sentry/mm"
	"github.com/moat-sandbox/moat/sentry/vfs"
	"github.com/moat-sandbox/moat/syscalls"
)

// Sandbox is a booted sentry, ready to start its init.
type Sandbox struct {
	Kernel *kernel.Kernel
	log    func(string, ...any)
	// seccomp is the container's linux.seccomp filter, which every
	// process it starts (init, exec) runs under.
	seccomp []seccomp.Insn
	// hostCPUs are the CPUs a cpuset may hold (the sentry's at boot).
	hostCPUs unix.CPUSet
	// kept is the overlay root whose upper layer is saved when the
	// guest is done, as keep says (keep.go); nil if none is.
	kept *vfs.Dentry
	keep *control.Keep
	// mf is the memory file, which a pod's other containers' trees
	// keep their pages in too.
	mf *memfile.File
	// pod holds the pod's other containers (pod.go).
	pod pod
}

// New builds the sandbox that setup describes, with the gofer on goferFD
// and the guest's stdio on fds 0, 1 and 2. An *kernel.InitError is a
// problem with the configuration; other errors are the sentry's.
//
// confine, if not nil, is called once the platform exists (systrap's
// stubs are forked from the sentry, and must not inherit its filter) and
// before anything of the image or the guest is read: the sentry installs
// its seccomp filter there.
func New(setup *control.Setup, goferFD int, log func(string, ...any), confine func() error) (*Sandbox, error) {
	spec := setup.Spec
	if spec == nil || spec.Process == nil || spec.Root == nil {
		return nil, fmt.Errorf("setup has no process or root")
	}
	noteNamespaces(spec.Linux, log)
	hw, err := readAuxv()
	if err != nil {
		return nil, err
	}
	mf, err := memfile.New()
	if err != nil {
		return nil, err
	}
	plat, err := newPlatform(setup.Platform, mf.FD())
	if err != nil {
		return nil, err
	}
	if hm, ok := plat.(platform.HostFileMapper); ok {
		// Image files' pages are then the host's, shared with every
		// sandbox of the image, not copies in the memory file.
		hm.MapHostFiles(mf)
		mf.EnableHostFiles()
	}
	var hostCPUs unix.CPUSet // what a cpuset may hold, read while the call is allowed
	if err := unix.SchedGetaffinity(0, &hostCPUs); err != nil {
		return nil, fmt.Errorf("the sentry's CPUs: %w", err)
	}
	if confine != nil {
		if err := confine(); err != nil {
			return nil, err
		}
	}
	hostname := spec.Hostname
	if hostname == "" {
		// A new UTS namespace starts with its parent's name, which runc
		// leaves when the config sets none.
		hostname = hostName()
	}
	// The kernel comes first, its root once the tree is built: a proc
	// mount is made in the config's order, as runc mounts them, so that
	// /proc/self/mountinfo lists the mounts in that order.
	k, err := kernel.New(kernel.Config{Platform: plat, MemFile: mf, Syscalls: syscalls.NewTable(),
		Hostname: hostname, HWCap: hw.hwcap, HWCap2: hw.hwcap2, MinSigStackSize: hw.minSigStk, Log: log})
	if err != nil {
		return nil, err
	}
	if spec.Linux != nil {
		limits, err := sandboxLimits(kernel.SandboxLimits{}, spec.Linux.Resources, hostCPUs)
		if err != nil {
			return nil, &kernel.InitError{Msg: err.Error()}
		}
		k.SetSandboxLimits(limits)
	}
	if err := setupNetwork(k, setup, log); err != nil {
		return nil, err
	}
	binds := make([]*gofer.Client, len(setup.Binds))
	for j := range binds {
		binds[j] = gofer.NewClient(control.BootBindFD0 + j)
	}
	root, err := buildTree(setup, gofer.NewClient(goferFD), binds, mf, k, k.RootPIDNamespace(), log)
	if err != nil {
		return nil, err
	}
	k.Root = root
	var kept *vfs.Dentry
	if setup.Keep != nil {
		kept = root.Dentry
	}
	if err := applyPathRules(root, spec.Linux, mf); err != nil {
		return nil, err
	}
	init, err := initSpec(spec.Process)
	if err != nil {
		return nil, err
	}
	var filter []seccomp.Insn
	if spec.Linux != nil {
		if filter, err = seccompProgram(spec.Linux.Seccomp); err != nil {
			return nil, err
		}
	}
	init.Seccomp = filter
	init.PlainSignals = spec.Annotations[InitSignalsAnnotation] == InitSignalsPlain
	if init.Stdio, err = stdioFiles(); err != nil {
		return nil, err
	}
	if spec.Process.Terminal {
		if err := attachConsole(root, &init); err != nil {
			return nil, err
		}
	}
	if err := k.CreateInit(init); err != nil {
		return nil, err
	}
	return &Sandbox{Kernel: k, log: log, seccomp: filter, hostCPUs: hostCPUs, kept: kept, keep: setup.Keep, mf: mf}, nil
}

// newPlatform starts the platform the CLI asked for over the memory file.
func newPlatform(name string, memFD int) (platform.Platform, error) {
	switch name {
	case "", control.PlatformSystrap:
		return systrap.New(memFD)
	case control.PlatformKVM:
		return kvm.New(memFD)
	}
	return nil, fmt.Errorf("unknown platform %q", name)
}

// hostName is the host's node name, as uname(2) gives it, or
// "localhost" if that fails.
func hostName() string {
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		return "localhost"
	}
	return unix.ByteSliceToString(u.Nodename[:])
}

// hostCPU are the facts about the CPU that a new program's auxiliary
// vector carries; they are the sentry's own, read once at boot.
type hostCPU struct {
	hwcap, hwcap2, minSigStk uint64
}

// readAuxv reads the vector the kernel gave the sentry, which the runtime
// keeps: a confined sentry cannot open /proc/self/auxv.
func readAuxv() (hostCPU, error) {
	auxv, err := unix.Auxv()
	if err != nil {
		return hostCPU{}, fmt.Errorf("read the sentry's auxiliary vector: %w", err)
	}
	var h hostCPU
	for _, e := range auxv {
		v := uint64(e[1])
		switch e[0] {
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

// buildTree mounts the root file system at /, and the config's mounts in
// its order: devfs at /dev (with the type, source and flags of the
// config's /dev mount, which it stands for; first, if there is none), bind mounts through their
// gofer sockets, the file systems the sentry makes (mountFS), and proc,
// k's as pid namespace pidns sees it (the tree's processes'). Other mount
// types are not supported yet and are logged. c serves the root file
// system, binds[j] the bind mount setup.Binds[j].
func buildTree(setup *control.Setup, c *gofer.Client, binds []*gofer.Client, mf *memfile.File, k *kernel.Kernel, pidns *kernel.PIDNamespace, log func(string, ...any)) (vfs.Path, error) {
	spec := setup.Spec
	root, err := mountRoot(spec.Root.Readonly, setup.RootfsWrites, overlayMemory(setup.OverlayMemory, k.SandboxLimits().MemoryMax), c, mf)
	if err != nil {
		return vfs.Path{}, fmt.Errorf("mount the root file system: %w", err)
	}
	if setup.Keep != nil {
		// Before anything is mounted on it: a mount point's directory
		// must be the kept one.
		if err := loadKept(root, setup.RootfsWrites, setup.Keep); err != nil {
			return vfs.Path{}, err
		}
	}
	now, _ := unix.TimeToTimespec(timeNow())
	var devices []specs.LinuxDevice
	if spec.Linux != nil {
		devices = spec.Linux.Devices
	}
	nodes, err := devNodes(devices)
	if err != nil {
		return vfs.Path{}, err
	}
	dev, err := devfs.New(now, nodes)
	if err != nil {
		return vfs.Path{}, fmt.Errorf("linux.devices: %w", err)
	}
	if !slices.ContainsFunc(spec.Mounts, func(m specs.Mount) bool { return path.Clean(m.Destination) == "/dev" }) {
		if err := mountAt(root, "/dev", dev, "devtmpfs", unix.MS_NOSUID, "devtmpfs", "mode=755"); err != nil {
			return vfs.Path{}, err
		}
	}
	bindFD := make(map[int]int, len(setup.Binds))
	for j, b := range setup.Binds {
		bindFD[b.Index] = j
	}
	ptsMounted := false
	for i, m := range spec.Mounts {
		switch j, isBind := bindFD[i]; {
		case isBind:
			if err := mountBind(root, m, setup.Binds[j], binds[j], mf); err != nil {
				return vfs.Path{}, err
			}
		case path.Clean(m.Destination) == "/dev":
			// devfs stands for the config's /dev, in its place.
			flags, _ := mountFlags(m.Options)
			if err := mountAt(root, "/dev", dev, m.Type, flags, m.Source, "mode=755"); err != nil {
				return vfs.Path{}, err
			}
		case m.Type == "proc":
			flags, _ := mountFlags(m.Options)
			if err := mountAt(root, m.Destination, procfs.New(k, pidns), "proc", flags, m.Source, ""); err != nil {
				return vfs.Path{}, err
			}
		default:
			if err := mountFS(root, m, mf, k, k.RootIPCNamespace().MQueue(), log); err != nil {
				return vfs.Path{}, err
			}
			ptsMounted = ptsMounted || m.Type == "devpts" && path.Clean(m.Destination) == "/dev/pts"
		}
	}
	if !ptsMounted {
		// /dev/ptmx leads to /dev/pts/ptmx: without the config's devpts
		// there, the one runc's default config has.
		pts := specs.Mount{Destination: "/dev/pts", Type: "devpts", Source: "devpts",
			Options: append([]string{"nosuid", "noexec"}, devpts.RuncOptions...)}
		if err := mountFS(root, pts, mf, k, nil, log); err != nil {
			return vfs.Path{}, err
		}
	}
	return root, nil
}

// mountFS mounts a file system the sentry makes for an OCI mount: tmpfs;
// sysfs, always read-only; a cgroup or cgroup2 mount, the read-only
// cgroup2 view of the sandbox (sysfs.NewCgroup); mqueue, the
// message queues of mq (the sandbox's IPC namespace's); devpts, a new
// instance of the sandbox's pseudo-terminals. Other types are logged and
// skipped.
func mountFS(root vfs.Path, m specs.Mount, mf *memfile.File, k *kernel.Kernel, mq *mqueue.Namespace, log func(string, ...any)) error {
	flags, data := mountFlags(m.Options)
	switch m.Type {
	case "tmpfs":
		return mountTmpfsFrom(root, m.Destination, m.Source, m.Options, mf, log)
	case "sysfs":
		return mountAt(root, m.Destination, sysfs.New(k.NumCPUs()), "sysfs", flags|unix.MS_RDONLY, m.Source, "")
	case "cgroup", "cgroup2":
		return mountAt(root, m.Destination, sysfs.NewCgroup(k), "cgroup2", flags|unix.MS_RDONLY, m.Source, "")
	case "mqueue":
		if len(data) > 0 {
			log("mqueue at %s: options %q ignored", m.Destination, data)
		}
		return mountAt(root, m.Destination, vfs.NewRoot(mq.Root()), "mqueue", flags, m.Source, "")
	case "devpts":
		opts, unknown, err := devpts.ParseOptions(data)
		if err != nil {
			return &kernel.InitError{Msg: fmt.Sprintf("mounts: devpts at %s: %v", m.Destination, err)}
		}
		if len(unknown) > 0 {
			log("devpts at %s: options %q ignored", m.Destination, unknown)
		}
		return mountAt(root, m.Destination, devpts.New(opts, timeNow()), "devpts", flags, m.Source, opts.String())
	}
	log("mount of %s at %s is not supported yet: skipped", m.Type, m.Destination)
	return nil
}

// mountRoot makes the root file system: the image through the gofer, alone
// if it is read-only or written through to the host, else under an overlay
// whose upper layer is a tmpfs (the default: the image is never written),
// which keeps overlayMemory bytes of file data in mf and spills the rest to
// the file on control.BootSpillFD. An image that does not change has its
// files' pages cached in mf.
func mountRoot(readonly bool, writes string, overlayMemory int64, c *gofer.Client, mf *memfile.File) (vfs.Path, error) {
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
	opts := tmpfs.DefaultOptions()
	if overlayMemory > 0 {
		opts.Spill = mm.NewSpill(control.BootSpillFD, overlayMemory)
	}
	d, err := overlay.New(image, tmpfs.New(mf, opts))
	if err != nil {
		return vfs.Path{}, err
	}
	m := vfs.NewRootMount(d, "overlay", 0)
	m.SetSource("overlay", "")
	return m.Root(), nil
}

// mountBind mounts the host tree a gofer socket serves at dest, with the
// OCI mount's flags (ro, nosuid, nodev, noexec). Its files' pages are
// cached only while mapped: the host may change a bind-mounted tree
// behind the sandbox.
func mountBind(root vfs.Path, m specs.Mount, b control.Bind, c *gofer.Client, mf *memfile.File) error {
	d, err := goferfs.New(c, mf, false)
	if err != nil {
		return fmt.Errorf("mounts: bind mount at %s: %w", m.Destination, err)
	}
	flags, _ := mountFlags(m.Options)
	source := b.HostSource
	if source == "" {
		source = m.Source
	}
	mnt, err := attachAt(root, m.Destination, d, fsTypeOf(d), flags)
	if err != nil {
		return err
	}
	mnt.SetSource(source, "")
	mnt.SetHostRoot(b.HostRoot)
	return nil
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
	return mountTmpfsFrom(root, dest, "tmpfs", options, mf, log)
}

// mountTmpfsFrom is mountTmpfs with the mount's source (tmpfs, shm, ...),
// for /proc/<pid>/mountinfo.
func mountTmpfsFrom(root vfs.Path, dest, source string, options []string, mf *memfile.File, log func(string, ...any)) error {
	flags, data := mountFlags(options)
	opts, unknown, err := tmpfs.ParseOptions(data)
	if err != nil {
		return &kernel.InitError{Msg: fmt.Sprintf("mounts: tmpfs at %s: %v", dest, err)}
	}
	if len(unknown) > 0 {
		log("tmpfs at %s: options %q ignored", dest, unknown)
	}
	return mountAt(root, dest, tmpfs.New(mf, opts), "tmpfs", flags, source, tmpfsData(opts))
}

// tmpfsData is how Linux's shmem_show_options shows a tmpfs's options:
// those that differ from a default mount's, size in KiB and mode in octal.
func tmpfsData(o tmpfs.Options) string {
	var parts []string
	if o.Size != 0 {
		parts = append(parts, fmt.Sprintf("size=%dk", o.Size/1024))
	}
	if def := tmpfs.DefaultOptions(); o.Mode != def.Mode {
		parts = append(parts, fmt.Sprintf("mode=%03o", o.Mode))
	}
	if o.UID != 0 {
		parts = append(parts, fmt.Sprintf("uid=%d", o.UID))
	}
	if o.GID != 0 {
		parts = append(parts, fmt.Sprintf("gid=%d", o.GID))
	}
	return strings.Join(parts, ",")
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

// mountAt attaches a file system at dest (an absolute path), making the
// mount point and its missing parents in the sentry's tree if the image
// lacks them, as runc makes them (mkdir -p) in the rootfs: a directory,
// or a file for a file system that is one file. source and data are what
// /proc/<pid>/mountinfo shows of it.
func mountAt(root vfs.Path, dest string, fsRoot *vfs.Dentry, fsType string, flags int, source, data string) error {
	m, err := attachAt(root, dest, fsRoot, fsType, flags)
	if err != nil {
		return err
	}
	if source == "" {
		source = fsType
	}
	m.SetSource(source, data)
	return nil
}

// attachAt is mountAt before the mount's source is set.
func attachAt(root vfs.Path, dest string, fsRoot *vfs.Dentry, fsType string, flags int) (*vfs.Mount, error) {
	dest = path.Clean(dest)
	if dest == "/" {
		return nil, fmt.Errorf("mount at /: only the root file system goes there")
	}
	point, err := vfs.MakeMountPath(root, dest, fsRoot.IsDir())
	if err != nil {
		return nil, fmt.Errorf("mount %s at %s: %w", fsType, dest, err)
	}
	m, err := vfs.Attach(point, fsRoot, fsType, flags)
	if err != nil {
		return nil, fmt.Errorf("mount %s at %s: %w", fsType, dest, err)
	}
	return m, nil
}
