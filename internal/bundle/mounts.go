package bundle

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"

	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// BindMount is a mount of a host file or directory into the container,
// which the gofer serves beside the root file system.
type BindMount struct {
	Index    int    // in spec.mounts
	Source   string // absolute host path
	Dest     string
	ReadOnly bool
	Dir      bool // a directory, not a single file
}

// IsBind reports whether m is a bind mount: of type "bind", or of any type
// with the bind or rbind option, as runc reads it.
func IsBind(m specs.Mount) bool {
	return m.Type == "bind" || slices.Contains(m.Options, "bind") || slices.Contains(m.Options, "rbind")
}

// bindMounts lists and checks the bind mounts of spec. A relative source
// is relative to the bundle, as runc resolves it (it runs there).
func bindMounts(spec *specs.Spec, bundleDir string) ([]BindMount, error) {
	var out []BindMount
	for i, m := range spec.Mounts {
		if !IsBind(m) {
			continue
		}
		field := fmt.Sprintf("mounts[%d]", i)
		fail := func(f, format string, args ...any) error {
			return &Error{Bundle: bundleDir, File: ConfigName, Field: field + f, Reason: fmt.Sprintf(format, args...)}
		}
		if !filepath.IsAbs(m.Destination) {
			return nil, fail(".destination", "%q is not an absolute path", m.Destination)
		}
		if m.Source == "" {
			return nil, fail(".source", "missing (a bind mount names the host path to mount)")
		}
		src := m.Source
		if !filepath.IsAbs(src) {
			src = filepath.Join(bundleDir, src)
		}
		src = filepath.Clean(src)
		info, err := os.Stat(src)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return nil, fail(".source", "%q: not found", m.Source)
		case err != nil:
			return nil, fail(".source", "%q: %v", m.Source, unwrapPath(err))
		}
		// The last of ro and rw wins, as mount(8) reads options.
		ro := false
		for _, o := range m.Options {
			switch o {
			case "ro":
				ro = true
			case "rw":
				ro = false
			}
		}
		out = append(out, BindMount{Index: i, Source: src, Dest: filepath.Clean(m.Destination), ReadOnly: ro, Dir: info.IsDir()})
	}
	return out, nil
}
