package bench

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/moat-sandbox/moat/internal/mountinfo"
)

// cgroupHierarchy is where the cgroups of one controller are: a v1
// hierarchy that has it, or the v2 one when its cgroup.controllers
// names it. A hybrid host (this one) has its controllers on v1, and a v2
// hierarchy at /sys/fs/cgroup/unified with none.
type cgroupHierarchy struct {
	mountpoint string
	root       string // the cgroup the mount shows at its mountpoint
	v2         bool
}

// findHierarchy finds controller's hierarchy in this process's mountinfo.
func findHierarchy(controller string) (cgroupHierarchy, error) {
	mounts, err := mountinfo.Read()
	if err != nil {
		return cgroupHierarchy{}, fmt.Errorf("finding the %s cgroup: %w", controller, err)
	}
	for _, m := range mounts {
		switch {
		case m.FSType == "cgroup" && slices.Contains(strings.Split(m.SuperOptions, ","), controller):
			return cgroupHierarchy{m.Point, m.Root, false}, nil
		case m.FSType == "cgroup2":
			ctrl, err := os.ReadFile(filepath.Join(m.Point, "cgroup.controllers"))
			if err == nil && slices.Contains(strings.Fields(string(ctrl)), controller) {
				return cgroupHierarchy{m.Point, m.Root, true}, nil
			}
		}
	}
	return cgroupHierarchy{}, fmt.Errorf("no cgroup hierarchy with the %s controller is mounted", controller)
}

// dir is the directory of cgroup path (absolute, as linux.cgroupsPath).
func (h cgroupHierarchy) dir(path string) string {
	rel := path
	if h.root != "/" {
		rel = strings.TrimPrefix(path, h.root)
	}
	return filepath.Join(h.mountpoint, rel)
}

// counter reads file of the cgroup at path, a single number.
func (h cgroupHierarchy) counter(path, file string) (uint64, error) {
	name := filepath.Join(h.dir(path), file)
	data, err := os.ReadFile(name)
	if err != nil {
		return 0, fmt.Errorf("cgroup: %w", err)
	}
	v, err := strconv.ParseUint(strings.TrimSpace(string(data)), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("cgroup %s: %w", name, err)
	}
	return v, nil
}
