package bundle

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"sync"

	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// supportedMinors are the 1.x minor versions of the runtime spec whose
// configs moat reads: the fields it relies on have not changed across them.
var supportedMinors = map[int]bool{0: true, 1: true, 2: true, 3: true}

// versionPattern matches major.minor.patch with an optional pre-release
// suffix, as in runc's own "1.0.2-dev".
// It is compiled on first use, not at init: the sentry and the gofer,
// the same binary, run every package's init and never match it, and an
// idle sandbox keeps what its inits allocated (docs/architecture.md).
var versionPattern = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^(\d+)\.(\d+)\.(\d+)(-[0-9A-Za-z.+-]+)?$`) })

// validate checks the fields of spec that moat needs, in the order a reader
// of config.json would fix them.
func validate(spec *specs.Spec, bundleDir string) error {
	fail := func(field, format string, args ...any) error {
		return &Error{Bundle: bundleDir, File: ConfigName, Field: field, Reason: fmt.Sprintf(format, args...)}
	}

	if spec.Version == "" {
		return fail("ociVersion", "missing")
	}
	if !supportedVersion(spec.Version) {
		return fail("ociVersion", "unsupported version %q (moat reads 1.0.x to 1.3.x)", spec.Version)
	}

	if spec.Process == nil {
		return fail("process", "missing")
	}
	if len(spec.Process.Args) == 0 {
		return fail("process.args", "must name the program to run, got none")
	}
	if spec.Process.Cwd == "" {
		return fail("process.cwd", "missing")
	}
	if !filepath.IsAbs(spec.Process.Cwd) {
		return fail("process.cwd", "%q is not an absolute path", spec.Process.Cwd)
	}

	if spec.Root == nil {
		return fail("root", "missing")
	}
	if spec.Root.Path == "" {
		return fail("root.path", "missing")
	}
	rootfs := rootfsPath(bundleDir, spec.Root.Path)
	info, err := os.Stat(rootfs)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fail("root.path", "%q: directory %s not found", spec.Root.Path, rootfs)
	case err != nil:
		return fail("root.path", "%q: %v", spec.Root.Path, unwrapPath(err))
	case !info.IsDir():
		return fail("root.path", "%q: %s is not a directory", spec.Root.Path, rootfs)
	}
	return validateHooks(spec.Hooks, fail)
}

// validateHooks checks what the CLI needs to run the hooks: an absolute
// path and a positive timeout each. startContainer hooks run inside the
// container before its program, which moat cannot do (the sentry runs no
// host program), so they are refused rather than left out.
func validateHooks(h *specs.Hooks, fail func(field, format string, args ...any) error) error {
	if h == nil {
		return nil
	}
	if len(h.StartContainer) > 0 {
		return fail("hooks.startContainer", "not supported: moat cannot run a program inside the sandbox before the container's own")
	}
	kinds := []struct {
		name  string
		hooks []specs.Hook
	}{
		{"prestart", h.Prestart}, // deprecated in the spec, still used
		{"createRuntime", h.CreateRuntime},
		{"createContainer", h.CreateContainer},
		{"poststart", h.Poststart},
		{"poststop", h.Poststop},
	}
	for _, k := range kinds {
		for i, hook := range k.hooks {
			field := fmt.Sprintf("hooks.%s[%d]", k.name, i)
			if !filepath.IsAbs(hook.Path) {
				return fail(field+".path", "%q is not an absolute path", hook.Path)
			}
			if hook.Timeout != nil && *hook.Timeout <= 0 {
				return fail(field+".timeout", "%d: must be a positive number of seconds", *hook.Timeout)
			}
		}
	}
	return nil
}

// supportedVersion reports whether v is a 1.0.x to 1.3.x version string.
func supportedVersion(v string) bool {
	m := versionPattern().FindStringSubmatch(v)
	if m == nil || m[1] != "1" {
		return false
	}
	minor, err := strconv.Atoi(m[2])
	return err == nil && supportedMinors[minor]
}
