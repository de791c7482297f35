package bench

import (
	"context"
	"os"
	"path/filepath"
	"strings"

	"github.com/moat-sandbox/moat/internal/ocirun"
)

// find resolves a runtime. It returns a nil instance, and the reason in the
// info, when the runtime cannot run here.
func (s *session) find(ctx context.Context, rt Runtime) (RuntimeInfo, *instance, error) {
	info := RuntimeInfo{Name: rt.Name, Kind: rt.Kind, Args: rt.Flags(), Note: rt.Note, Status: StatusSkipped, Serves: rt.Serves}
	path, err := rt.binaryPath(s.cfg.BinDir)
	switch {
	case rt.Skip != "":
		info.Reason = rt.Skip
	case err != nil:
		info.Reason = err.Error()
		if rt.Install != "" {
			info.Reason += "; install: " + rt.Install
		}
	case rt.missing() != "":
		info.Reason = "needs " + rt.missing()
	case os.Geteuid() != 0:
		// chroot for native; for the others, the bundle is not a rootless one.
		info.Reason = "needs root"
	}
	if info.Reason != "" {
		return info, nil, nil
	}
	in := &instance{Runtime: rt, bundle: s.bundle}
	info.Status, info.Binary = StatusOK, displayPath(path)
	if rt.Kind == KindNative {
		info.Version = "Linux " + firstLine("/proc/sys/kernel/osrelease")
		info.Command = "chroot BUNDLE/rootfs ARGV"
		return info, in, nil
	}
	if rt.Kind == KindCommand {
		in.command = path
		in.scratch = filepath.Join(s.dir, "scratch", rt.Name)
		if err := os.MkdirAll(in.scratch, 0o755); err != nil {
			return info, nil, err
		}
		info.Command = strings.Join(append([]string{info.Binary}, rt.Flags()...), " ") + " ARGV"
		return info, in, nil
	}
	oci := &ocirun.Runtime{Name: rt.Name, Path: path, Flags: rt.Flags()}
	in.oci = oci.At(filepath.Join(s.dir, "state", rt.Name))
	if err := os.MkdirAll(in.oci.Dir, 0o700); err != nil {
		return info, nil, err
	}
	info.Version = oci.Version(ctx)
	info.Command = info.Binary + " " + strings.Join(oci.At("STATE").Args("run", "--bundle", "BUNDLE", "ID"), " ")
	return info, in, nil
}

// displayPath shortens a path below the working directory to a relative one,
// so that a report made by `make bench` names bin/runsc, not the checkout's
// location on the machine that made it. A file in the directory itself
// keeps a "./", so that it is still a path, not a name to look up in $PATH.
func displayPath(path string) string {
	wd, err := os.Getwd()
	if err != nil {
		return path
	}
	rel, err := filepath.Rel(wd, path)
	switch {
	case err != nil || !filepath.IsLocal(rel):
		return path
	case !strings.ContainsRune(rel, filepath.Separator):
		return "." + string(filepath.Separator) + rel
	}
	return rel
}
