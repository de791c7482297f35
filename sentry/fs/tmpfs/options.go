package tmpfs

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/moat-sandbox/moat/sentry/mm"
	"golang.org/x/sys/unix"
)

// Options are a tmpfs's mount data.
type Options struct {
	Mode     uint32 // the root directory's permission bits
	UID, GID uint32 // the root directory's owner
	Size     int64  // bytes; 0 is no limit but memory (and the spill's)
	// Spill, for an overlay's upper layer, takes file data past its
	// memory limit out to a host file.
	Spill *mm.Spill
}

// DefaultOptions are what a tmpfs mounted without data gets, as on Linux.
func DefaultOptions() Options { return Options{Mode: 0o1777} }

// ParseOptions reads the tmpfs options among opts (the mount(8) -o
// options, as an OCI mount lists them): mode=, uid=, gid=, size= (bytes,
// with a k, m, g, t, p or e suffix, or a percentage of memory) and
// nr_blocks=; nr_inodes=, huge=, mpol=, inode32 and inode64 are accepted
// and ignored. It returns the options it does not know, for the caller to
// interpret (mount flags) or report.
func ParseOptions(opts []string) (Options, []string, error) {
	o := DefaultOptions()
	var rest []string
	for _, opt := range opts {
		key, val, hasVal := strings.Cut(opt, "=")
		var err error
		switch key {
		case "mode":
			var m uint64
			m, err = strconv.ParseUint(val, 8, 32)
			if err == nil && m > 0o7777 {
				err = fmt.Errorf("out of range")
			}
			o.Mode = uint32(m)
		case "uid", "gid":
			var id uint64
			id, err = strconv.ParseUint(val, 10, 32)
			if key == "uid" {
				o.UID = uint32(id)
			} else {
				o.GID = uint32(id)
			}
		case "size":
			o.Size, err = parseSize(val)
		case "nr_blocks":
			var n int64
			n, err = parseSize(val)
			o.Size = n * pageSize
		case "nr_inodes", "huge", "mpol", "inode32", "inode64", "noswap":
		default:
			rest = append(rest, opt)
			continue
		}
		if err == nil && !hasVal && key != "inode32" && key != "inode64" && key != "noswap" {
			err = fmt.Errorf("no value")
		}
		if err != nil {
			return o, nil, fmt.Errorf("tmpfs option %q: %v", opt, err)
		}
	}
	return o, rest, nil
}

// parseSize reads a size with an optional binary suffix (k, m, g, t, p, e)
// or a percentage of the host's memory.
func parseSize(s string) (int64, error) {
	if pct, ok := strings.CutSuffix(s, "%"); ok {
		p, err := strconv.ParseUint(pct, 10, 32)
		if err != nil {
			return 0, err
		}
		var si unix.Sysinfo_t
		if err := unix.Sysinfo(&si); err != nil {
			return 0, err
		}
		return int64(uint64(si.Totalram) * uint64(si.Unit) / 100 * p), nil
	}
	shift := 0
	if s != "" {
		if i := strings.IndexByte("kmgtpe", s[len(s)-1]|0x20); i >= 0 {
			shift = 10 * (i + 1)
			s = s[:len(s)-1]
		}
	}
	v, err := strconv.ParseUint(s, 0, 64)
	if err != nil {
		return 0, err
	}
	if shift > 0 && v > (1<<63-1)>>shift {
		return 0, fmt.Errorf("too large")
	}
	if v<<shift > 1<<63-1 {
		return 0, fmt.Errorf("too large")
	}
	return int64(v << shift), nil
}
