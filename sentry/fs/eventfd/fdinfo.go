package eventfd

import "fmt"

// FDInfo is what Linux's eventfd_show_fdinfo adds to
// /proc/<pid>/fdinfo/<fd>: the count in hexadecimal and whether the
// eventfd is a semaphore. (Linux's eventfd-id line, an id it numbers
// eventfds by, has no counterpart here.)
func (f *File) FDInfo() string {
	f.mu.Lock()
	count, sem := f.count, f.semaphore
	f.mu.Unlock()
	s := 0
	if sem {
		s = 1
	}
	return fmt.Sprintf("eventfd-count: %16x\neventfd-semaphore: %d\n", count, s)
}
