package confine

import (
	"fmt"
	"os"
	"strconv"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/internal/seccomp"
)

// Poller is the Go runtime's network poller of this process: its epoll
// descriptor and the eventfd a thread wakes it with.
type Poller struct{ EpollFD, EventFD int }

// StartPoller starts the Go runtime's poller now, while the process may
// still make descriptors and read /proc, and returns its descriptors. A
// process that polls nothing still gets one: the runtime starts it at the
// first timer any goroutine arms (its memory scavenger's sleep, some time
// into a long life), and a filter without its calls then kills the
// process.
func StartPoller() (Poller, error) {
	// A pipe's ends are polled: the first one starts the poller.
	r, w, err := os.Pipe()
	if err != nil {
		return Poller{}, fmt.Errorf("confine: start the Go poller: %w", err)
	}
	r.Close()
	w.Close()
	p := Poller{EpollFD: -1, EventFD: -1}
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return Poller{}, fmt.Errorf("confine: find the Go poller: %w", err)
	}
	for _, e := range fds {
		fd, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		target, _ := os.Readlink("/proc/self/fd/" + e.Name())
		switch target {
		case "anon_inode:[eventpoll]":
			p.EpollFD = fd
		case "anon_inode:[eventfd]":
			p.EventFD = fd
		}
	}
	if p.EpollFD < 0 || p.EventFD < 0 {
		return Poller{}, fmt.Errorf("confine: the Go poller's descriptors are not in /proc/self/fd (epoll %d, eventfd %d)", p.EpollFD, p.EventFD)
	}
	return p, nil
}

// Calls are the host calls the poller makes once started, each on its
// own descriptors only.
func (p Poller) Calls() Allowlist {
	epoll, event := uint64(p.EpollFD), uint64(p.EventFD)
	return Allowlist{
		call(unix.SYS_EPOLL_PWAIT, "epoll_pwait", "the Go runtime's poller sleeps until a timer's deadline",
			"the poller's epoll descriptor", seccomp.Allow(seccomp.Eq(0, epoll))),
		call(unix.SYS_EPOLL_CTL, "epoll_ctl", "the Go runtime's poller", "the poller's epoll descriptor",
			seccomp.Allow(seccomp.Eq(0, epoll))),
		call(unix.SYS_READ, "read", "the poller takes a wake-up", "the poller's eventfd", seccomp.Allow(seccomp.Eq(0, event))),
		call(unix.SYS_WRITE, "write", "a thread wakes the poller", "the poller's eventfd", seccomp.Allow(seccomp.Eq(0, event))),
	}
}
