package main

import (
	"os"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/internal/control"
)

// The kernel doubles a process's descriptor table each time a descriptor
// beyond it is taken, and a process whose table several threads share,
// as every Go process's is, waits out an RCU grace period at each
// doubling (expand_fdtable's synchronize_rcu): 8 to 25 ms apiece on the
// bench machine, with nothing to do meanwhile. The gofer holds a host
// descriptor for every node it has walked, and a directory walk
// (gofer/walkdir.go) takes one for each entry: Debian's /etc, its
// libraries' directory and /usr/bin make 850. A container's first
// commands made the gofer's table cross 64, 128, 256 and 512 while the
// guest waited on it, as much as 55 ms for the first `moat exec`'s
// look-up of /bin/true. The sentry keeps a host descriptor for each
// image file the guest has read (the page cache's backing): reading the
// 500 sources of Python's library took it past 256 and 512.
//
// A table that grows before the process has a second thread waits for
// nothing, and its size outlives execve. exec.Cmd's fork child is alone
// with its own copy of the table when it moves the files it passes into
// place, so a descriptor passed at a high number sizes the table there:
// the sentry and the gofer get control.TableFD, which each closes at
// once, and start with a table of 8192 (64 KiB of kernel memory), which
// Linux never shrinks. One that holds more grows it as before.

// reserveFDTable adds control.TableFD, as a duplicate of f, to byFD, a
// child's files as childFDs lays them out, unless RLIMIT_NOFILE is too
// low for the fork child to take it and the descriptors it takes above
// it (exec's status pipe, and each file it moves out of the way).
// Without it the child's table grows as it would.
func reserveFDTable(byFD map[int]*os.File, f *os.File) {
	var lim unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &lim); err != nil {
		return
	}
	highest := control.TableFD + 1 + len(byFD) + 1
	if uint64(highest) >= lim.Cur {
		return
	}
	byFD[control.TableFD] = f
}

// releaseFDTableFD closes control.TableFD in the sentry or the gofer, first
// thing: it only sized the descriptor table; if it was not passed,
// nothing is there.
func releaseFDTableFD() { unix.Close(control.TableFD) }
