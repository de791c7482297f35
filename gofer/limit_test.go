package gofer

import (
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// TestMakingPastTheDescriptorLimitLeavesNothing makes a directory and a
// file with the process's descriptor limit at what it holds, so that the
// gofer cannot walk to what it made: the calls fail with ENFILE and the
// host keeps neither name.
func TestMakingPastTheDescriptorLimitLeavesNothing(t *testing.T) {
	root := tree(t)
	s := newTestSession(t, root, false)
	var old unix.Rlimit
	must(t, unix.Getrlimit(unix.RLIMIT_NOFILE, &old))
	// The lowest free descriptor, which a new one would be: the limit
	// bounds descriptors' numbers.
	free, err := unix.Dup(0)
	must(t, err)
	unix.Close(free)
	limit := func(n uint64) {
		l := old
		l.Cur = n
		must(t, unix.Setrlimit(unix.RLIMIT_NOFILE, &l))
	}
	defer func() { must(t, unix.Setrlimit(unix.RLIMIT_NOFILE, &old)) }()

	// No descriptor left: mkdirat makes the directory, the walk to it
	// cannot open it.
	limit(uint64(free))
	mkErr := s.mkdir(RootNode, 0o755, 0, 0, "sub")
	// One left: the create opens the file, the walk cannot.
	limit(uint64(free + 1))
	fd, createErr := s.create(RootNode, 0o644, 0, 0, "new")
	must(t, unix.Setrlimit(unix.RLIMIT_NOFILE, &old))
	if fd >= 0 {
		unix.Close(fd)
	}
	if mkErr != unix.ENFILE || createErr != unix.ENFILE {
		t.Fatalf("at the descriptor limit: mkdir %v, create %v; want ENFILE for both", mkErr, createErr)
	}
	for _, name := range []string{"sub", "new"} {
		if _, err := os.Lstat(filepath.Join(root, name)); !os.IsNotExist(err) {
			t.Errorf("%s after its failed making: %v, want it absent", name, err)
		}
	}
}
