package memfile

import "golang.org/x/sys/unix"

// Charged is how many bytes of guest memory the file holds: every page
// the host has allocated to it (in memory or swapped out), less the warm
// ranges, which are free and kept only to be handed out again. This is
// what Linux's memory cgroup would charge the sandbox: anonymous pages
// once touched, tmpfs and shared memory, the page cache the sentry keeps
// for the guest. Pages freed but not yet zeroed still count (they still
// cost the host) until Free's goroutine has punched them.
func (f *File) Charged() uint64 {
	var st unix.Stat_t
	if unix.Fstat(f.fd, &st) != nil {
		return 0
	}
	f.mu.Lock()
	warm := f.warmBytes
	f.mu.Unlock()
	return max(uint64(st.Blocks)*512, warm) - warm
}

// Reclaiming reports whether freed pages are still waiting to be zeroed,
// so that Charged still counts them.
func (f *File) Reclaiming() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.reclaiming
}
