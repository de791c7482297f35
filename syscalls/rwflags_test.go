package syscalls

import (
	"testing"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/sentry/vfs"
)

// preadv2's flags as Linux 6.18 answers them for each kind of file.
func TestCheckRWFlags(t *testing.T) {
	for _, c := range []struct {
		flags int
		write bool
		typ   uint32
		major uint32
		mode  vfs.AppendMode
		err   error
	}{
		{0, true, unix.S_IFREG, 0, vfs.AppendIfOpened, nil},
		{unix.RWF_HIPRI | unix.RWF_DSYNC | unix.RWF_SYNC | unix.RWF_NOSIGNAL, true, unix.S_IFREG, 0, vfs.AppendIfOpened, nil},
		{unix.RWF_APPEND, true, unix.S_IFREG, 0, vfs.AppendAlways, nil},
		{unix.RWF_NOAPPEND, true, unix.S_IFREG, 0, vfs.AppendNever, nil},
		{unix.RWF_APPEND, false, unix.S_IFREG, 0, vfs.AppendIfOpened, nil},
		{unix.RWF_APPEND | unix.RWF_NOAPPEND, true, unix.S_IFREG, 0, 0, unix.EINVAL},
		{0x200, false, unix.S_IFREG, 0, 0, unix.EOPNOTSUPP},
		{-1, false, unix.S_IFIFO, 0, 0, unix.EOPNOTSUPP},
		{unix.RWF_ATOMIC, true, unix.S_IFREG, 0, 0, unix.EOPNOTSUPP},
		{unix.RWF_DONTCACHE, false, unix.S_IFIFO, 0, 0, unix.EOPNOTSUPP},
		{unix.RWF_NOWAIT, false, unix.S_IFREG, 0, 0, unix.EOPNOTSUPP},
		{unix.RWF_NOWAIT, false, unix.S_IFIFO, 0, vfs.AppendIfOpened, nil},
		{unix.RWF_NOWAIT, true, unix.S_IFSOCK, 0, vfs.AppendIfOpened, nil},
		{unix.RWF_NOWAIT, true, unix.S_IFCHR, memDevMajor, vfs.AppendIfOpened, nil},
		{unix.RWF_NOWAIT, false, unix.S_IFCHR, 136, 0, unix.EOPNOTSUPP},
		{unix.RWF_HIPRI, false, unix.S_IFDIR, 0, vfs.AppendIfOpened, nil},
		{unix.RWF_DSYNC, false, unix.S_IFDIR, 0, 0, unix.EOPNOTSUPP},
	} {
		mode, err := checkRWFlags(c.flags, c.write, c.typ, c.major)
		if err != c.err || err == nil && mode != c.mode {
			t.Errorf("checkRWFlags(%#x, write %v, type %#o, major %d) = %v, %v; want %v, %v",
				c.flags, c.write, c.typ, c.major, mode, err, c.mode, c.err)
		}
	}
}
