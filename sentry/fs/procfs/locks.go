package procfs

import (
	"fmt"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/sentry/vfs"
)

// locks is /proc/locks: every flock, POSIX and OFD lock the sandbox
// holds, in Linux's format ("1: POSIX  ADVISORY  WRITE 12 00:2a:1234 0
// EOF"), newest first, with the pids this /proc's namespace gives them
// (0 for one outside it).
func (f *fs) locks() ([]byte, error) {
	var b strings.Builder
	for k, l := range vfs.Locks.List() {
		typ := "READ"
		if l.Write {
			typ = "WRITE"
		}
		pid := l.PID
		if pid > 0 {
			pid = f.k.IDIn(f.ns, pid)
		}
		fmt.Fprintf(&b, "%d: %-6s ADVISORY  %s %d %02x:%02x:%d ", k+1, l.Kind, typ, pid,
			unix.Major(l.ID.Dev), unix.Minor(l.ID.Dev), l.ID.Ino)
		if l.End == vfs.OffsetMax {
			fmt.Fprintf(&b, "%d EOF\n", l.Start)
		} else {
			fmt.Fprintf(&b, "%d %d\n", l.Start, l.End)
		}
	}
	return []byte(b.String()), nil
}
