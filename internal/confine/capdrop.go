package confine

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// SetupCapabilities are what a confined process uses of its capabilities
// before DropPrivileges takes them: to make and enter its new root
// (CAP_SYS_ADMIN; CAP_DAC_READ_SEARCH and CAP_DAC_OVERRIDE for the
// directories of no mode it makes there), to lock its securebits and drop
// the rest of its bounding set (CAP_SETPCAP), and to become its user
// (CAP_SETUID, CAP_SETGID).
const SetupCapabilities uint64 = 1<<unix.CAP_SYS_ADMIN | 1<<unix.CAP_DAC_READ_SEARCH | 1<<unix.CAP_DAC_OVERRIDE |
	1<<unix.CAP_SETPCAP | 1<<unix.CAP_SETUID | 1<<unix.CAP_SETGID

// TableFD is the descriptor capdrop sizes a confined process's descriptor
// table to hold, before the process has a second thread. The kernel doubles
// a table each time a descriptor beyond it is taken, and a process whose
// table several threads share, as every Go process's is, waits out an RCU
// grace period at each doubling (expand_fdtable's synchronize_rcu): 8 to
// 25 ms apiece on the bench machine. The gofer holds a host descriptor for
// every node it has walked (Debian's /etc, its libraries and /usr/bin make
// 850), the sentry one for each image file the guest has read: their
// tables crossed 64, 128, 256 and 512 while the guest waited, as much as
// 55 ms for a container's first `moat exec`. A table of 8192 is 64 KiB of
// kernel memory, which Linux never shrinks; one that holds more grows as
// before. (Passing a descriptor at TableFD through exec.Cmd did the same
// at 0.6 ms per child: its fork child closes each of the 4,000 numbers
// below it that it does not pass.)
const TableFD = 4095

// ThroughCapdrop makes cmd, a re-execution of this binary that starts in a
// new user namespace (SentryProcAttr, GoferProcAttr), start through
// capdrop (capdrop/capdrop_amd64.S): a static program of a few hundred
// bytes, run from a sealed memfd, that drops from its bounding set every
// capability but keep, SetupCapabilities and cmd's ambient ones, and sizes
// its descriptor table (TableFD), on its one thread, then executes this
// binary with cmd's arguments. A new user
// namespace starts with a full bounding set, and Go cannot shrink it
// before its runtime has started threads: DropPrivileges then had to drop
// each capability on every thread, 41 stops of the world that cost 3-5 ms
// of each sandbox's start. What is left for it is SetupCapabilities.
func ThroughCapdrop(cmd *exec.Cmd, keep uint64) error {
	helper, exe, err := capdropFiles()
	if err != nil {
		return err
	}
	// Both go to the child as its last descriptors, capdrop then moat,
	// which capdrop closes as it executes moat. capdrop itself is exec'd
	// by path: the child's descriptors are in place by then.
	fd := 3 + len(cmd.ExtraFiles)
	cmd.ExtraFiles = append(cmd.ExtraFiles, helper, exe)
	mask := keep | SetupCapabilities
	if cmd.SysProcAttr != nil {
		for _, c := range cmd.SysProcAttr.AmbientCaps {
			mask |= 1 << c
		}
	}
	cmd.Path = "/proc/self/fd/" + strconv.Itoa(fd)
	cmd.Args = append([]string{"capdrop", strconv.FormatUint(mask, 16), strconv.FormatInt(int64(fd), 16)}, cmd.Args...)
	return nil
}

var capdrop struct {
	once   sync.Once
	helper *os.File // a sealed memfd holding capdropELF
	exe    *os.File // this binary, O_PATH
	err    error
}

// capdropFiles are capdrop and this binary, opened once per process.
func capdropFiles() (helper, exe *os.File, err error) {
	capdrop.once.Do(func() {
		fd, err := sealedMemfd("moat-capdrop", capdropELF)
		if err != nil {
			capdrop.err = err
			return
		}
		capdrop.helper = os.NewFile(uintptr(fd), "capdrop")
		if fd, err = unix.Open("/proc/self/exe", unix.O_PATH|unix.O_CLOEXEC, 0); err != nil {
			capdrop.err = fmt.Errorf("capdrop: open this binary: %w", err)
			return
		}
		capdrop.exe = os.NewFile(uintptr(fd), "moat")
	})
	return capdrop.helper, capdrop.exe, capdrop.err
}

// sealedMemfd is a memfd holding data that nobody can change.
func sealedMemfd(name string, data []byte) (int, error) {
	fd, err := unix.MemfdCreate(name, unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING)
	if err != nil {
		return -1, fmt.Errorf("capdrop: memfd: %w", err)
	}
	for off := 0; off < len(data); {
		n, err := unix.Write(fd, data[off:])
		if err != nil {
			unix.Close(fd)
			return -1, fmt.Errorf("capdrop: write its memfd: %w", err)
		}
		off += n
	}
	seals := unix.F_SEAL_SEAL | unix.F_SEAL_SHRINK | unix.F_SEAL_GROW | unix.F_SEAL_WRITE
	if _, err := unix.FcntlInt(uintptr(fd), unix.F_ADD_SEALS, seals); err != nil {
		unix.Close(fd)
		return -1, fmt.Errorf("capdrop: seal its memfd: %w", err)
	}
	return fd, nil
}

// inBoundingSet reports whether the calling thread's bounding set holds
// capability c.
func inBoundingSet(c int) bool {
	r, _, e := syscall.RawSyscall(unix.SYS_PRCTL, unix.PR_CAPBSET_READ, uintptr(c), 0)
	return e != 0 || r != 0
}
