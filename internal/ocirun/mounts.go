package ocirun

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/moat-sandbox/moat/internal/mountinfo"
)

// RemoveAll detaches every mount at or below dir, deepest first, then
// removes dir. Runtimes leave mounts in their state directories on purpose
// (current runsc keeps an empty network namespace bind-mounted there for
// --network=none, to reuse across containers), and a directory with a
// mount in it cannot be removed.
func RemoveAll(dir string) error {
	points, err := MountsUnder(dir)
	errs := []error{err}
	slices.SortFunc(points, func(a, b string) int { return len(b) - len(a) })
	for _, p := range points {
		if err := syscall.Unmount(p, syscall.MNT_DETACH); err != nil {
			errs = append(errs, &os.PathError{Op: "unmount", Path: p, Err: err})
		}
	}
	return errors.Join(append(errs, os.RemoveAll(dir))...)
}

// MountsUnder lists the mount points at or below dir in this process's
// mount namespace.
func MountsUnder(dir string) ([]string, error) {
	dir = filepath.Clean(dir)
	mounts, err := mountinfo.Read()
	if err != nil {
		return nil, err
	}
	var points []string
	for _, m := range mounts {
		if m.Point == dir || strings.HasPrefix(m.Point, dir+"/") {
			points = append(points, m.Point)
		}
	}
	return points, nil
}
