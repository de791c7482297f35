package ocirun

import (
	"bufio"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
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
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var points []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// The fifth field is the mount point (proc_pid_mountinfo(5)).
		fields := strings.Fields(sc.Text())
		if len(fields) < 5 {
			continue
		}
		if p := unescapeMountinfo(fields[4]); p == dir || strings.HasPrefix(p, dir+"/") {
			points = append(points, p)
		}
	}
	return points, sc.Err()
}

// unescapeMountinfo undoes the kernel's octal escapes in a mountinfo path:
// it writes space, tab, newline and backslash as \040, \011, \012, \134.
func unescapeMountinfo(s string) string {
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
