package unixsock

import "github.com/moat-sandbox/moat/sentry/kernel"

// Live returns how many AF_UNIX sockets of k's sandbox are not released.
func Live(k *kernel.Kernel) int {
	ns := nsOf(k)
	ns.mu.Lock()
	defer ns.mu.Unlock()
	return len(ns.all)
}

// InFlight returns how many files messages of k's sandbox carry.
func InFlight(k *kernel.Kernel) int {
	ns := nsOf(k)
	ns.mu.Lock()
	defer ns.mu.Unlock()
	return ns.total
}
