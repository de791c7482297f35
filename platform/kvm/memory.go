package kvm

import (
	"fmt"
	"sync"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// slots hands out KVM memory slots and registers guest-physical ranges.
// The last slot is kept for toggling (zapShadows).
type slots struct {
	vmFD int
	mu   sync.Mutex
	next uint32
	max  uint32
	// dummy is the page the toggled slot maps.
	dummy []byte
}

// zapShadows makes KVM drop every shadow page table it built from the
// guest's page tables: deleting a memory slot does that (on x86, KVM then
// invalidates all of them at once, and every vCPU builds its own anew from
// the guest's tables). So a slot is added and deleted again.
func (s *slots) zapShadows() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.dummy == nil {
		d, err := unix.Mmap(-1, 0, pageSize, unix.PROT_READ, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
		if err != nil {
			return fmt.Errorf("kvm: map the toggled slot's page: %w", err)
		}
		s.dummy = d
	}
	r := kvmUserspaceMemoryRegion{Slot: s.max, GuestPhysAddr: tablesGPA + tablesMax, MemorySize: pageSize,
		UserspaceAddr: uint64(uintptr(unsafe.Pointer(&s.dummy[0])))}
	if err := ioctlPtr(s.vmFD, kvmSetUserMemoryRegion, unsafe.Pointer(&r)); err != nil {
		return fmt.Errorf("kvm: add the toggled slot: %w", err)
	}
	r.MemorySize = 0
	if err := ioctlPtr(s.vmFD, kvmSetUserMemoryRegion, unsafe.Pointer(&r)); err != nil {
		return fmt.Errorf("kvm: delete the toggled slot: %w", err)
	}
	return nil
}

// register makes [gpa, gpa+size) the host memory at host.
func (s *slots) register(gpa, size uint64, host uintptr) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.next >= s.max {
		return fmt.Errorf("kvm: all %d memory slots are in use", s.max)
	}
	r := kvmUserspaceMemoryRegion{Slot: s.next, GuestPhysAddr: gpa, MemorySize: size, UserspaceAddr: uint64(host)}
	if err := ioctlPtr(s.vmFD, kvmSetUserMemoryRegion, unsafe.Pointer(&r)); err != nil {
		return fmt.Errorf("kvm: register guest memory [%#x, %#x): %w", gpa, gpa+size, err)
	}
	s.next++
	return nil
}

// guestMemory is the memory file as guest-physical memory, registered a
// chunk at a time as mappings reach it.
type guestMemory struct {
	slots  *slots
	mem    []byte // the platform's own mapping of the memory file
	size   uint64
	mu     sync.Mutex
	chunks []atomic.Bool
}

func newGuestMemory(s *slots, memFD int) (*guestMemory, error) {
	var st unix.Stat_t
	if err := unix.Fstat(memFD, &st); err != nil {
		return nil, fmt.Errorf("kvm: memory file: %w", err)
	}
	size := uint64(st.Size) &^ (pageSize - 1)
	if size == 0 || size > tablesGPA {
		return nil, fmt.Errorf("kvm: memory file of %#x bytes does not fit below %#x", size, uint64(tablesGPA))
	}
	mem, err := unix.Mmap(memFD, 0, int(size), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_NORESERVE)
	if err != nil {
		return nil, fmt.Errorf("kvm: map the memory file: %w", err)
	}
	n := (size + memChunk - 1) / memChunk
	return &guestMemory{slots: s, mem: mem, size: size, chunks: make([]atomic.Bool, n)}, nil
}

// ensure registers the chunks holding [off, off+length) of the file.
func (g *guestMemory) ensure(off, length uint64) error {
	if length == 0 {
		return nil
	}
	if off+length < off || off+length > g.size {
		return unix.EINVAL
	}
	for i := off / memChunk; i <= (off+length-1)/memChunk; i++ {
		if g.chunks[i].Load() {
			continue
		}
		if err := g.registerChunk(i); err != nil {
			return err
		}
	}
	return nil
}

func (g *guestMemory) registerChunk(i uint64) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.chunks[i].Load() {
		return nil
	}
	start := i * memChunk
	size := min(uint64(memChunk), g.size-start)
	if err := g.slots.register(start, size, uintptr(unsafe.Pointer(&g.mem[start]))); err != nil {
		return err
	}
	g.chunks[i].Store(true)
	return nil
}

// byteAt reads the byte at guest-physical address gpa of the file.
func (g *guestMemory) byteAt(gpa uint64) (byte, bool) {
	if gpa >= g.size {
		return 0, false
	}
	return g.mem[gpa], true
}

// region is the platform's own guest-physical memory: page tables, the
// stub's code and descriptor tables, the vCPUs' pages. It is a memfd of its
// own, mapped in the sentry and registered a chunk at a time, and it hands
// out single pages.
type region struct {
	slots      *slots
	fd         int
	mem        []byte
	mu         sync.Mutex
	next       uint64 // offsets from here on were never handed out
	free       []uint64
	registered uint64
}

func newRegion(s *slots) (*region, error) {
	fd, err := unix.MemfdCreate("moat-kvm-tables", unix.MFD_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("kvm: create the page table file: %w", err)
	}
	if err := unix.Ftruncate(fd, tablesMax); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("kvm: size the page table file: %w", err)
	}
	mem, err := unix.Mmap(fd, 0, tablesMax, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_NORESERVE)
	if err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("kvm: map the page table file: %w", err)
	}
	return &region{slots: s, fd: fd, mem: mem}, nil
}

// allocTable implements tableMemory: a zeroed page.
func (r *region) allocTable() (uint64, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var off uint64
	if n := len(r.free); n > 0 {
		off = r.free[n-1]
		r.free = r.free[:n-1]
	} else {
		if r.next == tablesMax {
			return 0, fmt.Errorf("kvm: the page table file is full")
		}
		off = r.next
		r.next += pageSize
		if r.next > r.registered {
			if err := r.slots.register(tablesGPA+r.registered, tablesChunk, uintptr(unsafe.Pointer(&r.mem[r.registered]))); err != nil {
				r.next -= pageSize
				return 0, err
			}
			r.registered += tablesChunk
		}
	}
	clear(r.mem[off : off+pageSize])
	return tablesGPA + off, nil
}

// release makes pages reusable.
func (r *region) release(pages []uint64) {
	r.mu.Lock()
	for _, gpa := range pages {
		r.free = append(r.free, gpa-tablesGPA)
	}
	r.mu.Unlock()
}

// table implements tableMemory.
func (r *region) table(gpa uint64) *[512]uint64 {
	return (*[512]uint64)(unsafe.Pointer(&r.mem[gpa-tablesGPA]))
}

// page returns the sentry's view of the page at gpa.
func (r *region) page(gpa uint64) []byte {
	off := gpa - tablesGPA
	return r.mem[off : off+pageSize : off+pageSize]
}
