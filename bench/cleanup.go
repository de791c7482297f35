package bench

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
)

// cleanUp deletes every container left in the runtimes' state directories,
// unmounts what the runtimes mounted there, and removes the session's files.
// It reports what it could not delete.
func (s *session) cleanUp() error {
	var errs []error
	for _, in := range s.instances {
		if in != nil {
			errs = append(errs, in.sweep())
		}
	}
	for _, f := range []*os.File{s.stdout, s.stderr} {
		if f != nil {
			f.Close()
		}
	}
	errs = append(errs, unmountUnder(s.dir))
	errs = append(errs, os.RemoveAll(s.dir))
	return errors.Join(errs...)
}

// unmountUnder detaches every mount below dir, deepest first. Runtimes leave
// mounts in their --root on purpose (current runsc keeps an empty network
// namespace bind-mounted there for --network=none, to reuse across
// containers), and a directory with a mount in it cannot be removed.
func unmountUnder(dir string) error {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return err
	}
	defer f.Close()
	prefix := filepath.Clean(dir) + "/"
	var points []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// Field 5 is the mount point (proc_pid_mountinfo(5)).
		fields := strings.Fields(sc.Text())
		if len(fields) < 5 {
			continue
		}
		if p := unescapeMountinfo(fields[4]); strings.HasPrefix(p, prefix) {
			points = append(points, p)
		}
	}
	if err := sc.Err(); err != nil {
		return err
	}
	slices.SortFunc(points, func(a, b string) int { return len(b) - len(a) })
	var errs []error
	for _, p := range points {
		if err := syscall.Unmount(p, syscall.MNT_DETACH); err != nil {
			errs = append(errs, fmt.Errorf("unmount %s: %w", p, err))
		}
	}
	return errors.Join(errs...)
}

// unescapeMountinfo undoes the kernel's octal escapes (\040 for a space) in
// a mountinfo path.
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
