package procfs

import (
	"fmt"
	"strings"

	"github.com/moat-sandbox/moat/platform"
	"github.com/moat-sandbox/moat/sentry/kernel"
)

// mapsLine is a line of /proc/<pid>/maps as Linux's show_map_vma prints
// it: the fields end with a space, and a name is padded to column 74.
func mapsLine(start, end uintptr, perm string, offset uint64, name string) string {
	line := fmt.Sprintf("%08x-%08x %s %08x 00:00 0 ", start, end, perm, offset)
	if name != "" {
		line = fmt.Sprintf("%-72s %s", line, name)
	}
	return line + "\n"
}

func maps(t *kernel.Task) ([]byte, error) {
	var b strings.Builder
	for _, m := range t.MM().Maps() {
		perm := []byte("---p")
		if m.Prot&platform.ProtRead != 0 {
			perm[0] = 'r'
		}
		if m.Prot&platform.ProtWrite != 0 {
			perm[1] = 'w'
		}
		if m.Prot&platform.ProtExec != 0 {
			perm[2] = 'x'
		}
		if m.Shared {
			perm[3] = 's'
		}
		b.WriteString(mapsLine(m.Start, m.End, string(perm), m.Offset, m.Name))
	}
	return []byte(b.String()), nil
}

// smapsRollup is /proc/<pid>/smaps_rollup: the memory of every mapping
// summed, under a header spanning them all, in Linux's fields and order.
// No page of a sandbox's process is counted as shared with another
// (Pss is Rss) but the kernel's own ([vdso], [vvar]), which are shared
// and clean as on Linux; a file's resident pages count as clean,
// anonymous ones (and a MAP_SHARED mapping of no file, Linux's shmem) as
// dirty.
func smapsRollup(t *kernel.Task) ([]byte, error) {
	ms := t.MM().Maps()
	if len(ms) == 0 {
		return nil, nil
	}
	var anon, file, shmem, kernelPages uint64
	for _, m := range ms {
		n := t.MM().ResidentSize(m.Start, m.End-m.Start)
		switch {
		case m.Name == "[vdso]" || m.Name == "[vvar]" || m.Name == "[vsyscall]":
			kernelPages += n
		case strings.HasPrefix(m.Name, "/") && !strings.HasSuffix(m.Name, " (deleted)"):
			file += n
		case m.Shared:
			shmem += n
		default:
			anon += n
		}
	}
	rss := anon + file + shmem + kernelPages
	private := rss - kernelPages
	var b strings.Builder
	b.WriteString(mapsLine(ms[0].Start, ms[len(ms)-1].End, "---p", 0, "[rollup]"))
	for _, f := range []struct {
		name string
		v    uint64
	}{
		{"Rss", rss}, {"Pss", private}, {"Pss_Dirty", anon + shmem}, {"Pss_Anon", anon}, {"Pss_File", file},
		{"Pss_Shmem", shmem}, {"Shared_Clean", kernelPages}, {"Shared_Dirty", 0}, {"Private_Clean", file},
		{"Private_Dirty", anon + shmem}, {"Referenced", rss}, {"Anonymous", anon}, {"KSM", 0}, {"LazyFree", 0},
		{"AnonHugePages", 0}, {"ShmemPmdMapped", 0}, {"FilePmdMapped", 0}, {"Shared_Hugetlb", 0},
		{"Private_Hugetlb", 0}, {"Swap", 0}, {"SwapPss", 0}, {"Locked", min(t.MM().Usage().Locked, rss)},
	} {
		fmt.Fprintf(&b, "%-16s%8d kB\n", f.name+":", f.v/1024)
	}
	return []byte(b.String()), nil
}
