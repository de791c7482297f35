package inotify

import (
	"fmt"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/sentry/vfs"
)

// FDInfo is what Linux's inotify_show_fdinfo adds to
// /proc/<pid>/fdinfo/<fd>: a line per watch with its descriptor, the
// watched inode's number and device (in the kernel's encoding, major<<20
// | minor), all in hexadecimal, and its mask. Linux ends the line with the
// inode's file handle where its file system can make one; the sentry's
// cannot (there is no name_to_handle_at), as Linux's procfs cannot, so the
// line ends after ignored_mask as it does there.
func (in *Instance) FDInfo() string {
	var b strings.Builder
	for _, w := range vfs.Watches(in) {
		dev := uint64(unix.Major(w.ID.Dev))<<20 | uint64(unix.Minor(w.ID.Dev))
		fmt.Fprintf(&b, "inotify wd:%x ino:%x sdev:%x mask:%x ignored_mask:0 \n", w.WD, w.ID.Ino, dev, w.Mask)
	}
	return b.String()
}
