// Package mountinfo reads the host's /proc/<pid>/mountinfo
// (proc_pid_mountinfo(5)): the CLI and the test tools ask it where a host
// path lies and what is mounted below a directory. The sentry never
// reads it: it makes its guests' mountinfo itself.
package mountinfo

import (
	"os"
	"strconv"
	"strings"
)

// Mount is one line of mountinfo.
type Mount struct {
	Root   string // the mount's root within its file system
	Point  string // the mount point
	FSType string
	Source string
	// SuperOptions are the file system's own options (a v1 cgroup
	// mount's controllers among them).
	SuperOptions string
}

// Read parses this process's mountinfo.
func Read() ([]Mount, error) {
	data, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	return Parse(string(data)), nil
}

// Parse parses mountinfo text, in its order (parents before children, a
// later mount on a point above an earlier one); malformed lines are left out.
func Parse(data string) []Mount {
	var out []Mount
	for _, line := range strings.Split(data, "\n") {
		// id parent major:minor root point options [optional...] - type source superoptions
		f := strings.Fields(line)
		sep := -1
		for i := 6; i < len(f); i++ {
			if f[i] == "-" {
				sep = i
				break
			}
		}
		if sep < 0 || sep+2 >= len(f) {
			continue
		}
		m := Mount{Root: unescape(f[3]), Point: unescape(f[4]), FSType: f[sep+1], Source: unescape(f[sep+2])}
		if sep+3 < len(f) {
			m.SuperOptions = f[sep+3]
		}
		out = append(out, m)
	}
	return out
}

// unescape undoes the kernel's octal escapes: it writes space, tab,
// newline and backslash as \040, \011, \012 and \134.
func unescape(s string) string {
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
