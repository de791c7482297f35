package systrap

import (
	"fmt"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"
)

// controlFileSize is the control file's (sparse) size: room for a million
// units, far more than any sandbox uses; only touched pages cost memory.
const controlFileSize = 1 << 36

// controlFile is the memfd that holds the stub region's pages: code,
// parameters, every stub's request and result pages and every thread slot.
// The sentry maps all of it read-write.
type controlFile struct {
	fd   int
	mem  []byte         // the sentry's mapping
	base unsafe.Pointer // &mem[0]

	mu   sync.Mutex
	next uint64   // first never-used unit offset
	free []uint64 // released unit offsets
}

func newControlFile() (*controlFile, error) {
	fd, err := unix.MemfdCreate("moat-stub-control", unix.MFD_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("create stub control file: %w", err)
	}
	if err := unix.Ftruncate(fd, controlFileSize); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("size stub control file: %w", err)
	}
	mem, err := unix.Mmap(fd, 0, controlFileSize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_NORESERVE)
	if err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("map stub control file: %w", err)
	}
	c := &controlFile{fd: fd, mem: mem, base: unsafe.Pointer(&mem[0])}
	copy(mem[0:codeSize], stubCode)
	c.next = paramsOff + paramSize
	c.next = (c.next + unitSize - 1) &^ (unitSize - 1)
	return c, nil
}

// allocUnit returns the offset of a zeroed unit.
func (c *controlFile) allocUnit() (uint64, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if n := len(c.free); n > 0 {
		off := c.free[n-1]
		c.free = c.free[:n-1]
		return off, nil
	}
	if c.next+unitSize > controlFileSize {
		return 0, fmt.Errorf("stub control file full")
	}
	off := c.next
	c.next += unitSize
	return off, nil
}

// freeUnit zeroes a unit (returning its pages to the host) and makes it
// available again. Only call it once no stub maps the unit.
func (c *controlFile) freeUnit(off uint64) {
	unix.Fallocate(c.fd, unix.FALLOC_FL_PUNCH_HOLE|unix.FALLOC_FL_KEEP_SIZE, int64(off), unitSize)
	c.mu.Lock()
	c.free = append(c.free, off)
	c.mu.Unlock()
}

// u32 returns a pointer to the 32-bit word at control-file offset off.
func (c *controlFile) u32(off uint64) *uint32 {
	return (*uint32)(unsafe.Add(c.base, off))
}

// u64 returns a pointer to the 64-bit word at control-file offset off.
func (c *controlFile) u64(off uint64) *uint64 {
	return (*uint64)(unsafe.Add(c.base, off))
}

func (c *controlFile) close() {
	unix.Munmap(c.mem)
	unix.Close(c.fd)
}
