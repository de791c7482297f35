package e2b

import (
	"bufio"
	"os"
	"strconv"
	"strings"
)

// minMemoryReserve is the least memory a pool leaves the host: it boots
// nothing ahead while the host's available memory is below the larger of
// this and a tenth of its total, so that sandboxes booted for no one
// never push the host, or the sandboxes in use, into reclaim.
const minMemoryReserve = 512 << 20

// hostMemoryLeavesRoom reports whether the host's available memory
// (MemAvailable) is above the pools' reserve; true when /proc/meminfo
// cannot say.
func hostMemoryLeavesRoom() bool {
	total, available, ok := readMeminfo("/proc/meminfo")
	if !ok {
		return true
	}
	return available > max(total/10, minMemoryReserve)
}

// readMeminfo reads MemTotal and MemAvailable, in bytes, from a file in
// /proc/meminfo's format.
func readMeminfo(path string) (total, available uint64, ok bool) {
	f, err := os.Open(path)
	if err != nil {
		return 0, 0, false
	}
	defer f.Close()
	found := 0
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		name, rest, _ := strings.Cut(sc.Text(), ":")
		var dst *uint64
		switch name {
		case "MemTotal":
			dst = &total
		case "MemAvailable":
			dst = &available
		default:
			continue
		}
		kib, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
		if err != nil {
			return 0, 0, false
		}
		*dst = kib << 10
		found++
	}
	return total, available, found == 2
}
