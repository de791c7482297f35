package procfs

import (
	"fmt"
	"strings"

	"github.com/moat-sandbox/moat/platform"
	"github.com/moat-sandbox/moat/sentry/kernel"
	"github.com/moat-sandbox/moat/sentry/mm"
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

// mapLine is m's line of /proc/<pid>/maps.
func mapLine(m mm.MapInfo) string {
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
	return mapsLine(m.Start, m.End, string(perm), m.Offset, m.Name)
}

func maps(t *kernel.Task) ([]byte, error) {
	var b strings.Builder
	for _, m := range t.MM().Maps() {
		b.WriteString(mapLine(m))
	}
	return []byte(b.String()), nil
}

// memCounts are resident bytes sorted as smaps counts them: private
// memory of no file (anon), a file's pages (clean), MAP_SHARED of no file
// (Linux's shmem), and the kernel's own pages ([vdso], [vvar]), shared
// and clean.
type memCounts struct{ anon, file, shmem, kernel uint64 }

// add counts n resident bytes of mapping m.
func (c *memCounts) add(m mm.MapInfo, n uint64) {
	switch {
	case m.Name == "[vdso]" || m.Name == "[vvar]" || m.Name == "[vsyscall]":
		c.kernel += n
	case strings.HasPrefix(m.Name, "/") && !strings.HasSuffix(m.Name, " (deleted)"):
		c.file += n
	case m.Shared:
		c.shmem += n
	default:
		c.anon += n
	}
}

// writeMemFields writes smaps' memory lines for c in Linux's order:
// smaps_rollup's (rollup), or a mapping's of size bytes.
func writeMemFields(b *strings.Builder, c memCounts, size, locked uint64, rollup bool) {
	rss := c.anon + c.file + c.shmem + c.kernel
	type field struct {
		name string
		v    uint64
	}
	var fs []field
	if !rollup {
		fs = append(fs, field{"Size", size}, field{"KernelPageSize", mm.PageSize}, field{"MMUPageSize", mm.PageSize})
	}
	fs = append(fs, field{"Rss", rss}, field{"Pss", rss - c.kernel})
	if rollup {
		fs = append(fs, field{"Pss_Dirty", c.anon + c.shmem}, field{"Pss_Anon", c.anon}, field{"Pss_File", c.file},
			field{"Pss_Shmem", c.shmem})
	}
	fs = append(fs, field{"Shared_Clean", c.kernel}, field{"Shared_Dirty", 0}, field{"Private_Clean", c.file},
		field{"Private_Dirty", c.anon + c.shmem}, field{"Referenced", rss}, field{"Anonymous", c.anon}, field{"KSM", 0},
		field{"LazyFree", 0}, field{"AnonHugePages", 0}, field{"ShmemPmdMapped", 0}, field{"FilePmdMapped", 0},
		field{"Shared_Hugetlb", 0}, field{"Private_Hugetlb", 0}, field{"Swap", 0}, field{"SwapPss", 0},
		field{"Locked", min(locked, rss)})
	for _, f := range fs {
		fmt.Fprintf(b, "%-16s%8d kB\n", f.name+":", f.v/1024)
	}
}

// vmFlags is a mapping's VmFlags line of smaps, Linux's two-letter names
// for the flags moat keeps (no soft-dirty "sd": moat does not track it).
func vmFlags(m mm.MapInfo) string {
	fl := "VmFlags: "
	add := func(ok bool, name string) {
		if ok {
			fl += name + " "
		}
	}
	add(m.Prot&platform.ProtRead != 0, "rd")
	add(m.Prot&platform.ProtWrite != 0, "wr")
	add(m.Prot&platform.ProtExec != 0, "ex")
	add(m.Shared, "sh")
	add(m.MaxProt&platform.ProtRead != 0, "mr")
	add(m.MaxProt&platform.ProtWrite != 0, "mw")
	add(m.MaxProt&platform.ProtExec != 0, "me")
	add(m.Shared, "ms")
	add(m.GrowsDown, "gd")
	add(m.Locked, "lo")
	add(!m.Shared && m.Prot&platform.ProtWrite != 0, "ac")
	return fl + "\n"
}

// smaps is /proc/<pid>/smaps: each mapping's line of maps, then its
// memory in smaps_rollup's terms (no page of a sandbox's process is
// counted as shared with another, as there), and its flags.
func smaps(t *kernel.Task) ([]byte, error) {
	var b strings.Builder
	for _, m := range t.MM().Maps() {
		b.WriteString(mapLine(m))
		size := uint64(m.End - m.Start)
		var c memCounts
		c.add(m, t.MM().ResidentSize(m.Start, m.End-m.Start))
		locked := uint64(0)
		if m.Locked {
			locked = size
		}
		writeMemFields(&b, c, size, locked, false)
		b.WriteString("THPeligible:    0\n")
		b.WriteString(vmFlags(m))
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
	var c memCounts
	for _, m := range ms {
		c.add(m, t.MM().ResidentSize(m.Start, m.End-m.Start))
	}
	var b strings.Builder
	b.WriteString(mapsLine(ms[0].Start, ms[len(ms)-1].End, "---p", 0, "[rollup]"))
	writeMemFields(&b, c, 0, t.MM().Usage().Locked, true)
	return []byte(b.String()), nil
}
