package devfs

import (
	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/sentry/vfs"
)

// device is a character device in /dev.
type device struct {
	name         string
	major, minor uint32
	perm         uint32
	open         func(flags int) (deviceIO, error)
}

var devices = []device{
	{"null", 1, 3, 0o666, func(int) (deviceIO, error) { return nullDev{}, nil }},
	{"zero", 1, 5, 0o666, func(int) (deviceIO, error) { return zeroDev{}, nil }},
	{"full", 1, 7, 0o666, func(int) (deviceIO, error) { return fullDev{}, nil }},
	{"random", 1, 8, 0o666, func(int) (deviceIO, error) { return randomDev{}, nil }},
	{"urandom", 1, 9, 0o666, func(int) (deviceIO, error) { return randomDev{}, nil }},
	// /dev/tty opens its caller's controlling terminal (OpenDevice).
	{"tty", 5, 0, 0o666, nil},
}

// deviceIO is an open device; the node supplies its attributes.
type deviceIO interface {
	Read(dst *vfs.IOSeq, off int64) (int, error)
	Write(src *vfs.IOSeq, off int64) (int, error)
	Ioctl(cmd uint32, arg uintptr, io vfs.IoctlIO) (uintptr, error)
	Release()
	Size() (int64, error)
}

// noIO answers the calls a device does not implement.
type noIO struct{}

func (noIO) Read(*vfs.IOSeq, int64) (int, error)  { return 0, unix.EINVAL }
func (noIO) Write(*vfs.IOSeq, int64) (int, error) { return 0, unix.EINVAL }
func (noIO) Ioctl(uint32, uintptr, vfs.IoctlIO) (uintptr, error) {
	return 0, unix.ENOTTY
}
func (noIO) Release() {}

// Devices are seekable, and always at offset 0.
func (noIO) Size() (int64, error) { return 0, nil }

// nullDev is /dev/null: reads find end of file, writes vanish.
type nullDev struct{ noIO }

func (nullDev) Read(*vfs.IOSeq, int64) (int, error)        { return 0, nil }
func (nullDev) Write(src *vfs.IOSeq, _ int64) (int, error) { return src.Len(), nil }

// zeroDev is /dev/zero: reads give zeros, writes vanish.
type zeroDev struct{ noIO }

func (zeroDev) Read(dst *vfs.IOSeq, _ int64) (int, error)  { return zeroFill(dst) }
func (zeroDev) Write(src *vfs.IOSeq, _ int64) (int, error) { return src.Len(), nil }

// fullDev is /dev/full: reads give zeros, writes find no space.
type fullDev struct{ noIO }

func (fullDev) Read(dst *vfs.IOSeq, _ int64) (int, error) { return zeroFill(dst) }
func (fullDev) Write(*vfs.IOSeq, int64) (int, error)      { return 0, unix.ENOSPC }

func zeroFill(dst *vfs.IOSeq) (int, error) {
	return dst.WithSlices(true, func(bufs [][]byte) (int, error) {
		n := 0
		for _, b := range bufs {
			clear(b)
			n += len(b)
		}
		return n, nil
	})
}

// randomDev is /dev/random and /dev/urandom: the host's random bytes (both
// never block, as on Linux since 5.6 once the pool is ready).
type randomDev struct{ noIO }

func (randomDev) Read(dst *vfs.IOSeq, _ int64) (int, error) {
	return dst.WithSlices(true, func(bufs [][]byte) (int, error) {
		n := 0
		for _, b := range bufs {
			for len(b) > 0 {
				k, err := unix.Getrandom(b, 0)
				if err == unix.EINTR {
					continue
				}
				if err != nil {
					return n, err
				}
				n += k
				b = b[k:]
			}
		}
		return n, nil
	})
}
func (randomDev) Write(src *vfs.IOSeq, _ int64) (int, error) { return src.Len(), nil }
