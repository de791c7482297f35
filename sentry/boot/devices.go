package boot

import (
	"fmt"
	"path"
	"strings"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/sentry/fs/devfs"
)

// devNodes are the nodes linux.devices adds to /dev. A node opens as the
// device its number names in the sandbox (devfs.OpenDevice): the host's
// device is never reached, so a number the sandbox does not implement
// answers ENXIO, as a node without a driver does. A device outside /dev
// is refused: moat's /dev is the only place it makes nodes.
func devNodes(devices []specs.LinuxDevice) ([]devfs.Node, error) {
	var nodes []devfs.Node
	for _, d := range devices {
		p := path.Clean(d.Path)
		rel, ok := strings.CutPrefix(p, "/dev/")
		if !path.IsAbs(d.Path) || !ok || rel == "" {
			return nil, fmt.Errorf("linux.devices: %q is not a path under /dev", d.Path)
		}
		var typ uint32
		switch d.Type {
		case "c", "u":
			typ = unix.S_IFCHR
		case "b":
			typ = unix.S_IFBLK
		case "p":
			typ = unix.S_IFIFO
		default:
			return nil, fmt.Errorf("linux.devices: %s: type %q is not c, u, b or p", d.Path, d.Type)
		}
		perm := uint32(0o666)
		if d.FileMode != nil {
			perm = uint32(*d.FileMode) & 0o7777
		}
		n := devfs.Node{Path: rel, Mode: typ | perm}
		if typ != unix.S_IFIFO {
			n.Rdev = unix.Mkdev(uint32(d.Major), uint32(d.Minor))
		}
		if d.UID != nil {
			n.UID = *d.UID
		}
		if d.GID != nil {
			n.GID = *d.GID
		}
		nodes = append(nodes, n)
	}
	return nodes, nil
}
