package conformance

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/moat-sandbox/moat/internal/ocirun"
)

// Hostname is the hostname the container config sets; programs receive it
// as argv[2] to check uname against.
const Hostname = "moat-conformance"

// bundle is the one OCI bundle every container run shares. Runs are
// sequential, so config.json is rewritten with each run's arguments
// (ocirun.WriteSpec).
type bundle struct {
	dir    string
	rootfs string
}

// newBundle lays out a bundle in dir: a rootfs holding the data files, the
// program binaries from binDir under /conformance/bin and, if busybox is not
// empty, busybox as /bin/busybox.
func newBundle(dir, binDir string, progs []Program, busybox string) (*bundle, error) {
	b := &bundle{dir: dir, rootfs: filepath.Join(dir, ocirun.Rootfs)}
	if err := os.MkdirAll(b.rootfs, 0o755); err != nil {
		return nil, err
	}
	// /tmp, world-writable and sticky, for the runs with no mount there
	// (PlaceRoot).
	tmp := filepath.Join(b.rootfs, "tmp")
	if err := os.MkdirAll(tmp, 0o755); err != nil {
		return nil, err
	}
	if err := os.Chmod(tmp, 0o1777); err != nil {
		return nil, err
	}
	if err := writeRootfsData(b.rootfs); err != nil {
		return nil, fmt.Errorf("writing the rootfs data: %w", err)
	}
	for _, p := range progs {
		if err := copyFile(filepath.Join(binDir, p.binaryName()), b.binaryPath(p)); err != nil {
			return nil, err
		}
	}
	if busybox != "" {
		if err := copyFile(busybox, filepath.Join(b.rootfs, "bin/busybox")); err != nil {
			return nil, err
		}
	}
	return b, nil
}

// binaryPath is where a program's binary lies on the host.
func (b *bundle) binaryPath(p Program) string {
	return filepath.Join(b.rootfs, "conformance/bin", p.binaryName())
}

// containerSpec is the container config: as little as a runtime needs, so
// that the suite measures system calls and not configuration support.
func containerSpec(args []string) *specs.Spec {
	// HOME is set explicitly because runc adds it when it is missing and
	// other runtimes need not: the environment is then the config's alone,
	// and busybox env can be compared.
	spec := ocirun.Spec(args, []string{"PATH=/bin", "HOME=/"}, Hostname)
	spec.Process.NoNewPrivileges = true
	spec.Mounts = []specs.Mount{
		// runc needs /proc to close inherited descriptors. /dev is a tmpfs
		// so that the runtime can create the devices the OCI spec requires
		// without writing into the image.
		ocirun.Proc(),
		ocirun.Tmpfs("/dev", "nosuid", "noexec", "mode=755", "size=1m"),
		// The pseudo-terminals, mounted as runc's default config does
		// (runc makes /dev/ptmx a link to pts/ptmx).
		ocirun.Devpts(),
		// A writable /tmp, as container engines give, for the programs
		// that create files.
		ocirun.Tmpfs("/tmp", "nosuid", "nodev", "mode=1777", "size=65536k"),
		// The container's POSIX message queues, as runc's default config
		// mounts them.
		{Destination: "/dev/mqueue", Type: "mqueue", Source: "mqueue", Options: []string{"nosuid", "noexec", "nodev"}},
	}
	return spec
}

// copyFile copies an executable, mode 0755 whatever the umask.
func copyFile(from, to string) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o755)
	if err != nil {
		return err
	}
	_, err = io.Copy(out, in)
	if err == nil {
		err = out.Chmod(0o755)
	}
	return errors.Join(err, out.Close())
}

// clearTmp empties the rootfs's /tmp, which a run with a writable root
// (PlaceRoot) may have written to under a runtime that writes through.
func (b *bundle) clearTmp() {
	tmp := filepath.Join(b.rootfs, "tmp")
	entries, _ := os.ReadDir(tmp)
	for _, ent := range entries {
		os.RemoveAll(filepath.Join(tmp, ent.Name()))
	}
}
