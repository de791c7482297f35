package main

import (
	"path/filepath"
	"strings"

	"github.com/moat-sandbox/moat/internal/mountinfo"
)

// hostOrigin says where the host path p lies, as /proc/self/mountinfo
// has it: p's path within the file system that holds it, and that file
// system's source (a device, or tmpfs ...). The guest's mountinfo shows a
// bind mount of p so, as Linux shows one. Without mountinfo it is p
// itself, as seen from a root file system mounted at /.
func hostOrigin(p string) (root, source string) {
	if real, err := filepath.EvalSymlinks(p); err == nil {
		p = real
	}
	mounts, err := mountinfo.Read()
	if err != nil {
		return p, p
	}
	return originIn(mounts, p)
}

// originIn is hostOrigin among mounts: the last (the one on top) of the
// longest mount points that are p or one of its parents gives the answer.
func originIn(mounts []mountinfo.Mount, p string) (root, source string) {
	root, source = p, p
	best := -1
	for _, m := range mounts {
		rel, ok := under(p, m.Point)
		if !ok || len(m.Point) < best {
			continue
		}
		best = len(m.Point)
		root, source = filepath.Join(m.Root, rel), m.Source
	}
	return root, source
}

// under reports whether p is point or below it, and p's path from it.
func under(p, point string) (string, bool) {
	if point == "/" {
		return p, true
	}
	if p == point {
		return "/", true
	}
	if strings.HasPrefix(p, point+"/") {
		return p[len(point):], true
	}
	return "", false
}
