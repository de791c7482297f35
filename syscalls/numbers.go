package syscalls

import "sync"

// numbers are the x86-64 system call numbers by name.
var numbers = sync.OnceValue(func() map[string]uint32 {
	m := make(map[string]uint32, len(names))
	for nr, name := range names {
		if name != "" {
			m[name] = uint32(nr)
		}
	}
	return m
})

// Number is the x86-64 number of the system call named name (as
// libseccomp and the OCI seccomp profiles name them), if it has one.
func Number(name string) (uint32, bool) {
	nr, ok := numbers()[name]
	return nr, ok
}

// Count is one more than the highest x86-64 system call number.
func Count() int { return len(names) }
