package mm

import (
	"sync"

	"golang.org/x/sys/unix"
)

// The overcommit heuristic: Linux's default (vm.overcommit_memory 0, which
// /proc/sys shows) refuses a private writable mapping only when it alone
// is longer than the machine's RAM and swap, and MAP_NORESERVE or a
// mapping that is not writable escapes even that. Address space is cheap
// (lazy.go backs long anonymous mappings as they are touched); what
// protects the host is the sandbox's memory limit, which counts the pages
// written (kernel/memcg.go). As on Linux, the rule is checked when a
// mapping is made, not when mprotect makes a mapping writable later, nor
// on brk or mremap: those are the parts of Linux's accounting moat leaves
// out.

// commitFits reports whether a private writable mapping of length bytes
// passes the heuristic. Mappings of at most anonEagerMax bytes pass
// without asking the host: they are refused on Linux only on a machine
// with less memory than that.
func commitFits(length uintptr) bool {
	return length <= anonEagerMax || uint64(length) <= hostCommitLimit()
}

// hostCommitLimit is the host's RAM and swap, the bound Linux's heuristic
// holds a single mapping to: the sandbox's processes are the host's, as a
// runc container's are.
var hostCommitLimit = sync.OnceValue(func() uint64 {
	var si unix.Sysinfo_t
	if unix.Sysinfo(&si) != nil {
		return ^uint64(0)
	}
	return (uint64(si.Totalram) + uint64(si.Totalswap)) * uint64(si.Unit)
})
