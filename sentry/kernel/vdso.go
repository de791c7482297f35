package kernel

import (
	"fmt"

	"github.com/moat-sandbox/moat/platform"
	"github.com/moat-sandbox/moat/sentry/mm"
	"github.com/moat-sandbox/moat/sentry/vdso"
)

// vdsoPages are the sandbox's vDSO in the memory file: the parameter page
// the sentry keeps current, followed by the image. Every address space maps
// both, so clock_gettime, gettimeofday, time and getcpu need no trap.
type vdsoPages struct {
	params *vdso.Params
	pages  *mm.FileCache // [params | image], pinned for the sandbox's life
}

// newVDSO fills the sandbox's vDSO pages and starts the sentry's updates of
// the parameter page, which stop when the sandbox ends.
func (k *Kernel) newVDSO() (*vdsoPages, error) {
	size := uint64(vdso.MappingSize())
	off, err := k.MemFile.Allocate(size)
	if err != nil {
		return nil, fmt.Errorf("allocate the vDSO: %w", err)
	}
	copy(k.MemFile.Slice(off+vdso.ParamsSize, uint64(vdso.ImageSize())), vdso.ImagePages())
	p := vdso.NewParams(k.MemFile.Slice(off, vdso.ParamsSize), bootClockOffset-k.bootMono)
	p.Start(k.done)
	return &vdsoPages{params: p, pages: mm.NewResidentCache(k.MemFile, off, int64(size))}, nil
}

// mapVDSO maps the vDSO into m as Linux does, "[vvar]" then "[vdso]", both
// read-only for good (the guest can never write the parameter page, and a
// private mapping of it would stop following the sentry's updates), and
// returns the image's address for AT_SYSINFO_EHDR.
func (k *Kernel) mapVDSO(m *mm.MemoryManager) (uintptr, error) {
	r := platform.ProtRead
	base, err := m.MMap(mm.MMapOpts{Length: uintptr(vdso.MappingSize()), Prot: r, MaxProt: r,
		Shared: true, Cache: k.vdso.pages, Name: "[vvar]"})
	if err != nil {
		return 0, err
	}
	rx := platform.ProtRead | platform.ProtExec
	image := base + vdso.ParamsSize
	if _, err := m.MMap(mm.MMapOpts{Addr: image, Length: uintptr(vdso.ImageSize()), Prot: rx, MaxProt: rx,
		Fixed: true, Cache: k.vdso.pages, Offset: vdso.ParamsSize, Name: "[vdso]"}); err != nil {
		return 0, err
	}
	return image, nil
}
