package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
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
	data, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return p, p
	}
	return originIn(string(data), p)
}

// originIn is hostOrigin reading the mountinfo text data: the last mount
// (the one on top) whose mount point is p or one of its parents, the
// longest such, gives the answer.
func originIn(data, p string) (root, source string) {
	root, source = p, p
	best := -1
	for _, line := range strings.Split(data, "\n") {
		// id parent major:minor root mountpoint options [optional...] - type source superoptions
		f := strings.Fields(line)
		sep := -1
		for i := 6; i < len(f); i++ {
			if f[i] == "-" {
				sep = i
				break
			}
		}
		if len(f) < 7 || sep < 0 || sep+2 >= len(f) {
			continue
		}
		mountRoot, point := unescapeMountinfo(f[3]), unescapeMountinfo(f[4])
		rel, ok := under(p, point)
		if !ok || len(point) < best {
			continue
		}
		best = len(point)
		root, source = filepath.Join(mountRoot, rel), unescapeMountinfo(f[sep+2])
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

// unescapeMountinfo undoes the octal escapes (\040 for a space) with
// which the kernel writes white space and backslashes in mountinfo.
func unescapeMountinfo(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+4 <= len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
