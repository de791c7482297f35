package bench

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// find resolves a runtime. It returns a nil instance, and the reason in the
// info, when the runtime cannot run here.
func (s *session) find(ctx context.Context, rt Runtime) (RuntimeInfo, *instance, error) {
	info := RuntimeInfo{Name: rt.Name, Kind: rt.Kind, Args: rt.Args, Note: rt.Note, Status: StatusSkipped}
	path, err := rt.binaryPath(s.cfg.BinDir)
	switch {
	case rt.Skip != "":
		info.Reason = rt.Skip
	case err != nil:
		info.Reason = err.Error()
		if rt.Install != "" {
			info.Reason += "; install: " + rt.Install
		}
	case os.Geteuid() != 0:
		// chroot for native; for the others, the bundle is not a rootless one.
		info.Reason = "needs root"
	}
	if info.Reason != "" {
		return info, nil, nil
	}
	in := &instance{Runtime: rt, path: path, bundle: s.bundle, state: filepath.Join(s.dir, "state", rt.Name)}
	info.Status, info.Binary = StatusOK, displayPath(path)
	if rt.Kind == KindNative {
		info.Version = "Linux " + firstLine("/proc/sys/kernel/osrelease")
		info.Command = "chroot BUNDLE/rootfs ARGV"
		return info, in, nil
	}
	if err := os.MkdirAll(in.state, 0o700); err != nil {
		return info, nil, err
	}
	info.Version = version(ctx, path)
	placeholders := instance{Runtime: rt, state: "STATE"}
	info.Command = info.Binary + " " + strings.Join(placeholders.args("run", "--bundle", "BUNDLE", "ID"), " ")
	return info, in, nil
}

// version is the first line of `binary --version`, or "" if it has none.
func version(ctx context.Context, binary string) string {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, binary, "--version").Output()
	if err != nil {
		return ""
	}
	line, _, _ := strings.Cut(string(out), "\n")
	return strings.TrimSpace(line)
}

// displayPath shortens a path below the working directory to a relative one,
// so that a report made by `make bench` names bin/runsc, not the checkout's
// location on the machine that made it.
func displayPath(path string) string {
	wd, err := os.Getwd()
	if err != nil {
		return path
	}
	if rel, err := filepath.Rel(wd, path); err == nil && filepath.IsLocal(rel) {
		return rel
	}
	return path
}
