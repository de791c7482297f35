package syscalls

import (
	"testing"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/internal/linuxabi"
)

// openat2's struct open_how as Linux's build_open_flags checks it.
func TestOpenHowCheck(t *testing.T) {
	for _, c := range []struct {
		how  openHow
		want error
	}{
		{openHow{Flags: unix.O_RDONLY}, nil},
		{openHow{Flags: unix.O_RDWR | unix.O_CREAT | unix.O_EXCL, Mode: 0o7777}, nil},
		{openHow{Flags: unix.O_WRONLY | unix.O_TMPFILE, Mode: 0o600}, nil},
		{openHow{Flags: unix.O_PATH | unix.O_CLOEXEC | unix.O_NOFOLLOW | unix.O_DIRECTORY}, nil},
		{openHow{Flags: linuxabi.O_LARGEFILE, Resolve: resolveCached | unix.RESOLVE_BENEATH}, nil},
		{openHow{Flags: 1 << 32}, unix.EINVAL},
		{openHow{Flags: 0o40000000000}, unix.EINVAL},
		{openHow{Resolve: 0x40}, unix.EINVAL},
		{openHow{Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_IN_ROOT}, unix.EINVAL},
		{openHow{Mode: 0o644}, unix.EINVAL},
		{openHow{Flags: unix.O_CREAT, Mode: 0o10000}, unix.EINVAL},
		{openHow{Flags: unix.O_CREAT | unix.O_DIRECTORY}, unix.EINVAL},
		{openHow{Flags: unix.O_TMPFILE}, unix.EINVAL},
		{openHow{Flags: oTmpfileBit | unix.O_WRONLY}, unix.EINVAL},
		{openHow{Flags: unix.O_PATH | unix.O_RDWR}, unix.EINVAL},
		{openHow{Flags: unix.O_PATH | linuxabi.O_LARGEFILE}, unix.EINVAL},
		{openHow{Flags: unix.O_TRUNC | unix.O_WRONLY, Resolve: resolveCached}, unix.EAGAIN},
		{openHow{Flags: unix.O_CREAT, Resolve: resolveCached}, unix.EAGAIN},
	} {
		if got := c.how.check(); got != c.want {
			t.Errorf("%+v: %v, want %v", c.how, got, c.want)
		}
	}
}
