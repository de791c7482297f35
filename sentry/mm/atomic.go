package mm

import (
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/platform"
)

// Futexes and robust lists need atomic access to guest words: the guest's
// own threads may change them at the same moment on other CPUs.

// word returns the sentry's pointer to the aligned 32-bit word at addr;
// write asks for a writable, private page (copy-on-write copied first,
// under the write lock the caller holds).
func (m *MemoryManager) wordLocked(addr uintptr, write bool) (*uint32, error) {
	if addr%4 != 0 {
		return nil, unix.EINVAL
	}
	v, ok := m.vmas.lookup(addr)
	if !ok || (write && v.prot&platform.ProtWrite == 0) || (!write && v.prot&protAll == 0) {
		return nil, unix.EFAULT
	}
	if write {
		if err := m.breakCowLocked(pageRoundDown(addr), pageRoundDown(addr)+PageSize); err != nil {
			return nil, err
		}
	}
	p, ok := m.pmas.lookup(addr)
	if !ok {
		return nil, unix.EFAULT
	}
	return (*uint32)(unsafe.Pointer(&m.mf.Slice(p.off+uint64(addr-p.start), 4)[0])), nil
}

// LoadU32 reads the aligned word at addr atomically.
func (m *MemoryManager) LoadU32(addr uintptr) (uint32, error) {
	unlock := m.lockFor([]Range{{addr, 4}}, false)
	defer unlock()
	w, err := m.wordLocked(addr, false)
	if err != nil {
		return 0, err
	}
	return atomic.LoadUint32(w), nil
}

// UpdateU32 applies fn to the aligned word at addr atomically (retrying if
// the guest changes it meanwhile) and returns the old value. fn returns
// the new value and whether to store it.
func (m *MemoryManager) UpdateU32(addr uintptr, fn func(old uint32) (uint32, bool)) (uint32, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.fillRangesLocked([]Range{{addr, 4}})
	w, err := m.wordLocked(addr, true)
	if err != nil {
		return 0, err
	}
	for {
		old := atomic.LoadUint32(w)
		nu, store := fn(old)
		if !store || atomic.CompareAndSwapUint32(w, old, nu) {
			return old, nil
		}
	}
}

// FutexKey identifies the word at addr for futex queues: its memory-file
// offset if the mapping is shared (so that processes sharing it meet), or
// this address space and the address otherwise. A private futex is its
// address alone, mapped or not, as Linux's get_futex_key makes it (a wake
// of an unmapped one finds no waiters; a wait reads the word and faults).
func (m *MemoryManager) FutexKey(addr uintptr, private bool) (FutexKey, error) {
	if addr%4 != 0 {
		return FutexKey{}, unix.EINVAL
	}
	if private {
		if addr+4 < addr || addr+4 > m.maxAddr {
			return FutexKey{}, unix.EFAULT
		}
		return FutexKey{MM: m, Addr: uint64(addr)}, nil
	}
	unlock := m.lockFor([]Range{{addr, 4}}, false)
	defer unlock()
	v, ok := m.vmas.lookup(addr)
	if !ok {
		return FutexKey{}, unix.EFAULT
	}
	if !v.shared {
		return FutexKey{MM: m, Addr: uint64(addr)}, nil
	}
	p, ok := m.pmas.lookup(addr)
	if !ok {
		return FutexKey{}, unix.EFAULT
	}
	return FutexKey{Addr: p.off + uint64(addr-p.start)}, nil
}

// FutexKey is a futex's identity: (address space, address) for private
// memory, (nil, memory-file offset) for shared memory.
type FutexKey struct {
	MM   *MemoryManager
	Addr uint64
}
