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

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/gofer"
	"github.com/moat-sandbox/moat/internal/control"
	"github.com/moat-sandbox/moat/platform/systrap"
	"github.com/moat-sandbox/moat/sentry/fs/devfs"
	"github.com/moat-sandbox/moat/sentry/fs/goferfs"
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
	root, err := buildTree(spec, gofer.NewClient(goferFD), log)
	if err != nil {
		return nil, err
	}
	hostname := spec.Hostname
	if hostname == "" {
		hostname = "localhost"
	}
	k := kernel.New(kernel.Config{Platform: plat, MemFile: mf, Syscalls: syscalls.NewTable(), Root: root,
		Hostname: hostname, HWCap: hw.hwcap, HWCap2: hw.hwcap2, MinSigStackSize: hw.minSigStk, Log: log})
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

// buildTree mounts the gofer's rootfs at / and devfs at /dev. Other OCI
// mounts are not supported yet and are logged.
func buildTree(spec *specsSpec, c *gofer.Client, log func(string, ...any)) (vfs.Path, error) {
	rootDentry, err := goferfs.New(c)
	if err != nil {
		return vfs.Path{}, fmt.Errorf("mount the root file system: %w", err)
	}
	flags := 0
	if spec.Root.Readonly {
		flags |= unix.MS_RDONLY
	}
	root := vfs.NewRootMount(rootDentry, "9p", flags).Root()
	now, _ := unix.TimeToTimespec(timeNow())
	dev, err := vfs.Resolver{Root: root, Start: root}.Lookup("/dev", true)
	if err != nil {
		log("no /dev directory in the root file system: /dev is not mounted")
	} else if _, err := vfs.Attach(dev, devfs.New(now), "devtmpfs", unix.MS_NOSUID); err != nil {
		return vfs.Path{}, fmt.Errorf("mount /dev: %w", err)
	}
	for _, m := range spec.Mounts {
		if m.Destination == "/dev" {
			continue
		}
		log("mount of %s at %s is not supported yet: skipped", m.Type, m.Destination)
	}
	return root, nil
}
