package procfs

import (
	"sync"

	"golang.org/x/sys/unix"
)

// The host files /proc shows something of are read (cpuinfo) or opened
// (meminfo, whose figures change) once, by ReadHostFiles, before the sentry
// confines itself: a confined sentry opens no file.
var host = sync.OnceValue(func() hostFiles {
	h := hostFiles{cpuinfo: hostCPUInfo(), meminfo: -1}
	if fd, err := unix.Open("/proc/meminfo", unix.O_RDONLY|unix.O_CLOEXEC, 0); err == nil {
		h.meminfo = fd
	}
	return h
})

type hostFiles struct {
	cpuinfo []byte
	meminfo int // an fd of the host's /proc/meminfo, or -1
}

// ReadHostFiles reads and opens what /proc needs of the host's files.
func ReadHostFiles() { host() }

// readHostMeminfo reads the host's /proc/meminfo from the start, which
// has the host kernel generate it anew.
func readHostMeminfo() ([]byte, error) {
	fd := host().meminfo
	if fd < 0 {
		return nil, unix.ENOENT
	}
	b := make([]byte, 8192)
	for {
		n, err := unix.Pread(fd, b, 0)
		if err != nil {
			return nil, err
		}
		if n < len(b) {
			return b[:n], nil
		}
		b = make([]byte, 2*len(b))
	}
}
