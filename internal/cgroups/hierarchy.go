package cgroups

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/internal/mountinfo"
)

// Mode is how the host's cgroup hierarchies are laid out.
type Mode string

const (
	// Unified: one v2 hierarchy at the root holds every controller.
	Unified Mode = "v2"
	// Hybrid: v1 hierarchies hold the controllers and a v2 hierarchy
	// without them is mounted at root/unified, for membership only.
	Hybrid Mode = "hybrid"
	// Legacy: v1 hierarchies only.
	Legacy Mode = "v1"
)

// DetectMode tells the layout under root (/sys/fs/cgroup) from the file
// system types there, as runc and systemd do.
func DetectMode(root string) (Mode, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(root, &st); err != nil {
		return "", fmt.Errorf("cgroups: statfs %s: %w", root, err)
	}
	if st.Type == unix.CGROUP2_SUPER_MAGIC {
		return Unified, nil
	}
	if err := unix.Statfs(filepath.Join(root, "unified"), &st); err == nil && st.Type == unix.CGROUP2_SUPER_MAGIC {
		return Hybrid, nil
	}
	return Legacy, nil
}

// hierarchy is one mounted cgroup hierarchy.
type hierarchy struct {
	mountpoint string
	// root is the cgroup the mount shows at its mountpoint (not "/"
	// inside a container that mounted its own cgroup).
	root string
	// controllers are a v1 hierarchy's (a named one's is "name=..."),
	// empty for v2.
	controllers []string
}

// v1 options that name no controller.
var v1Options = map[string]bool{"rw": true, "ro": true, "noprefix": true, "clone_children": true,
	"xattr": true, "cpuset_v2_mode": true, "favordynmods": true, "nofavordynmods": true}

// readHierarchies lists the cgroup mounts under root.
func readHierarchies(mounts []mountinfo.Mount, root string) (v1 []hierarchy, v2 *hierarchy) {
	seen := map[string]bool{}
	for _, m := range mounts {
		if m.Point != root && !strings.HasPrefix(m.Point, root+"/") {
			continue
		}
		h := hierarchy{mountpoint: m.Point, root: m.Root}
		switch m.FSType {
		case "cgroup2":
			if v2 == nil {
				v2 = &h
			}
		case "cgroup":
			for _, o := range strings.Split(m.SuperOptions, ",") {
				if o != "" && !v1Options[o] && !strings.HasPrefix(o, "release_agent=") {
					h.controllers = append(h.controllers, o)
				}
			}
			// One entry per hierarchy: a bind mount of it adds nothing.
			key := strings.Join(h.controllers, ",")
			if len(h.controllers) > 0 && !seen[key] {
				seen[key] = true
				v1 = append(v1, h)
			}
		}
	}
	return v1, v2
}

// ownCgroups reads /proc/self/cgroup: each hierarchy's cgroup of the
// caller, keyed by its controller list ("" for v2).
func ownCgroups(r io.Reader) (map[string]string, error) {
	own := map[string]string{}
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		// hierarchy-id:controller-list:cgroup-path
		f := strings.SplitN(sc.Text(), ":", 3)
		if len(f) == 3 {
			own[f[1]] = f[2]
		}
	}
	return own, sc.Err()
}

// dirIn is the directory of cgroup inner in hierarchy h: inner taken
// from h's root when absolute, else from own, the caller's cgroup there.
func dirIn(h hierarchy, inner, own string) string {
	p := inner
	if !filepath.IsAbs(inner) {
		p = filepath.Join(own, inner)
	}
	// The mount shows the hierarchy from h.root down.
	rel := strings.TrimPrefix(p, h.root)
	if h.root == "/" {
		rel = p
	}
	return filepath.Join(h.mountpoint, rel)
}

func openProc(name string) (*os.File, error) { return os.Open(filepath.Join("/proc/self", name)) }
