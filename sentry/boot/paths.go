package boot

import (
	"fmt"
	"path"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/sentry/fs/tmpfs"
	"github.com/moat-sandbox/moat/sentry/memfile"
	"github.com/moat-sandbox/moat/sentry/vfs"
)

// applyPathRules applies the config's linux.readonlyPaths, then its
// linux.maskedPaths, once every mount is in place, as runc does after its
// mounts: a read-only path becomes a read-only bind of itself (with the
// mounts below it, still writable, as runc's MS_BIND|MS_REC then
// remount leaves them); a masked file gets /dev/null bound over it, a
// masked directory an empty read-only tmpfs. A path that does not exist
// is skipped. Paths are resolved in the sandbox's tree, following
// symlinks, as mount(2) follows them.
func applyPathRules(root vfs.Path, linux *specs.Linux, mf *memfile.File) error {
	if linux == nil {
		return nil
	}
	res := vfs.Resolver{Root: root, Start: root, Creds: vfs.KernelCreds}
	for _, name := range linux.ReadonlyPaths {
		p, err := res.Lookup(path.Clean("/"+name), true)
		if err == unix.ENOENT {
			continue
		}
		if err != nil {
			return fmt.Errorf("linux.readonlyPaths: %s: %w", name, err)
		}
		if _, err := vfs.BindMount(p, p, p.Mount.Flags|unix.MS_RDONLY|unix.MS_REC); err != nil {
			return fmt.Errorf("linux.readonlyPaths: %s: %w", name, err)
		}
	}
	var null vfs.Path
	for _, name := range linux.MaskedPaths {
		p, err := res.Lookup(path.Clean("/"+name), true)
		if err == unix.ENOENT {
			continue
		}
		if err != nil {
			return fmt.Errorf("linux.maskedPaths: %s: %w", name, err)
		}
		if p.Dentry.IsDir() {
			m, err := vfs.Attach(p, tmpfs.New(mf, tmpfs.DefaultOptions()), "tmpfs", unix.MS_RDONLY)
			if err != nil {
				return fmt.Errorf("linux.maskedPaths: %s: %w", name, err)
			}
			m.SetSource("tmpfs", "")
			continue
		}
		if null.Dentry == nil {
			if null, err = res.Lookup("/dev/null", true); err != nil {
				return fmt.Errorf("linux.maskedPaths: %s: no /dev/null to mask it with: %w", name, err)
			}
		}
		if _, err := vfs.BindMount(null, p, null.Mount.Flags); err != nil {
			return fmt.Errorf("linux.maskedPaths: %s: %w", name, err)
		}
	}
	return nil
}
