package kernel

// Hooks into unexported state for the tests of package kernel_test, which
// drive the kernel through guest programs and must know when a guest
// thread has reached a state no system call reports.

// FutexWaiters is how many tasks wait on futexes, over every key.
func FutexWaiters(k *Kernel) int {
	ft := &k.futexes
	ft.mu.Lock()
	defer ft.mu.Unlock()
	n := 0
	for _, q := range ft.waiters {
		n += len(q)
	}
	return n
}
