package epoll

import (
	"fmt"
	"sort"
	"strings"

	"golang.org/x/sys/unix"
)

// privateEvents are the flags of an item that are not events
// (EPOLLONESHOT, EPOLLWAKEUP, EPOLLET, EPOLLEXCLUSIVE): a one-shot item
// that fired keeps only these, as Linux's ep_poll_callback leaves it.
const privateEvents = EventOneShot | eventWakeup | EventEdge | eventExcl

// FDInfo is what Linux's ep_show_fdinfo adds to /proc/<pid>/fdinfo/<fd>:
// a line per file of the interest list, with its fd, events (EPOLLERR and
// EPOLLHUP always among them, as epoll_ctl adds them), data, and the
// file's offset, inode and device (in the kernel's encoding, major<<20 |
// minor), by fd.
func (ep *File) FDInfo() string {
	ep.mu.Lock()
	items := make([]*item, 0, len(ep.interest))
	for _, it := range ep.interest {
		items = append(items, it)
	}
	type line struct {
		fd     int32
		events uint32
		data   uint64
	}
	lines := make([]line, len(items))
	for i, it := range items {
		ev := it.events | unix.EPOLLERR | unix.EPOLLHUP
		if it.off {
			ev = it.events & privateEvents
		}
		lines[i] = line{it.fd, ev, it.data}
	}
	ep.mu.Unlock()
	order := make([]int, len(items))
	for i := range order {
		order[i] = i
	}
	sort.Slice(order, func(a, b int) bool { return lines[order[a]].fd < lines[order[b]].fd })
	var b strings.Builder
	for _, i := range order {
		l, f := lines[i], items[i].file
		var ino, dev uint64
		if st, err := f.Stat(); err == nil {
			ino, dev = st.Ino, uint64(unix.Major(st.Dev))<<20|uint64(unix.Minor(st.Dev))
		}
		fmt.Fprintf(&b, "tfd: %8d events: %8x data: %16x  pos:%d ino:%x sdev:%x\n", l.fd, l.events, l.data,
			f.Offset(), ino, dev)
	}
	return b.String()
}
