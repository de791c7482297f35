// Package cgroups puts a sandbox's host processes (the sentry, its stubs
// and the gofer) in one cgroup of the host and applies the container's
// linux.resources to it, on cgroup v1, v2 or the hybrid of both, as runc
// does: the cgroup is the sandbox's hard backstop, while the sentry
// enforces the limits its guest sees itself.
//
// It never touches a cgroup it did not make, except to read its parent's
// cpuset to seed a new v1 cpuset.
package cgroups

import (
	"errors"
	"fmt"
	"path"
	"strings"
)

// Inner turns linux.cgroupsPath into the cgroup's path inside each
// hierarchy, as runc's drivers do. With systemd, the path is
// "slice:prefix:name" and names the scope prefix-name.scope in slice (or
// the slice name itself when name ends in .slice); moat never asks
// systemd for the unit, it makes the directory systemd would, so the
// result is always absolute. Without systemd the path is a directory,
// absolute from the hierarchy's root or relative to the caller's own
// cgroup. An empty path gives runc's default for container id.
func Inner(cgroupsPath string, systemd bool, id string) (string, error) {
	if systemd {
		return systemdInner(cgroupsPath, id)
	}
	if cgroupsPath == "" {
		return id, nil // relative: under the caller's cgroup, as runc's fs driver
	}
	if strings.Contains(cgroupsPath, ":") {
		return "", fieldError("linux.cgroupsPath", cgroupsPath, "a systemd slice:prefix:name needs --systemd-cgroup; a cgroupfs path holds no ':'")
	}
	p := cleanPath(cgroupsPath)
	if p == "/" || p == "." {
		return "", fieldError("linux.cgroupsPath", cgroupsPath, "names the hierarchy's root or the caller's own cgroup, which moat will not take over")
	}
	return p, nil
}

// cleanPath cleans p without letting ".." climb above where it starts:
// a relative path stays under the caller's cgroup.
func cleanPath(p string) string {
	if path.IsAbs(p) {
		return path.Clean(p)
	}
	return strings.TrimPrefix(path.Clean("/"+p), "/")
}

// systemdDefaultSlice is the slice systemd's driver puts a unit in when
// the path names none.
const systemdDefaultSlice = "system.slice"

func systemdInner(cgroupsPath, id string) (string, error) {
	slice, prefix, name := systemdDefaultSlice, "moat", id
	if cgroupsPath != "" {
		parts := strings.Split(cgroupsPath, ":")
		if len(parts) != 3 {
			return "", fieldError("linux.cgroupsPath", cgroupsPath, "with --systemd-cgroup, want slice:prefix:name")
		}
		slice, prefix, name = parts[0], parts[1], parts[2]
		if slice == "" {
			slice = systemdDefaultSlice
		}
	}
	if name == "" || strings.Contains(name, "/") || strings.Contains(prefix, "/") {
		return "", fieldError("linux.cgroupsPath", cgroupsPath, "with --systemd-cgroup, the prefix and name may hold no '/' and the name must not be empty")
	}
	dir, err := expandSlice(slice)
	if err != nil {
		return "", fieldError("linux.cgroupsPath", cgroupsPath, err.Error())
	}
	// A name that is itself a slice is the unit; anything else is a scope.
	unit := name
	if !strings.HasSuffix(name, ".slice") {
		unit = name + ".scope"
		if prefix != "" {
			unit = prefix + "-" + unit
		}
	}
	return path.Join(dir, unit), nil
}

// expandSlice is the directory of a systemd slice: each dash-separated
// prefix of its name is a slice nested in the one before
// (a-b-c.slice is /a.slice/a-b.slice/a-b-c.slice), and -.slice is the root.
func expandSlice(slice string) (string, error) {
	const suffix = ".slice"
	base, ok := strings.CutSuffix(slice, suffix)
	if !ok || base == "" || strings.Contains(slice, "/") {
		return "", fmt.Errorf("%q is not a systemd slice name (NAME.slice)", slice)
	}
	if base == "-" {
		return "/", nil
	}
	dir, prefix := "", ""
	for _, part := range strings.Split(base, "-") {
		if part == "" {
			return "", fmt.Errorf("%q is not a systemd slice name: empty part between dashes", slice)
		}
		prefix += part
		dir += "/" + prefix + suffix
		prefix += "-"
	}
	return dir, nil
}

// FieldError is a bad value in config.json: the field's name, the value
// and what is wrong with it, as one line.
type FieldError struct {
	Field, Value, Problem string
}

func (e *FieldError) Error() string {
	return fmt.Sprintf("%s: %s: %s", e.Field, e.Value, e.Problem)
}

func fieldError(field string, value any, problem string) error {
	v := fmt.Sprint(value)
	if s, ok := value.(string); ok {
		v = fmt.Sprintf("%q", s)
	}
	return &FieldError{Field: field, Value: v, Problem: problem}
}

// IsFieldError reports whether err is a bad value in the config.
func IsFieldError(err error) bool {
	var fe *FieldError
	return errors.As(err, &fe)
}
