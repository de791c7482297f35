package mm

import (
	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/platform"
)

// Forced access, as a debugger reaches another process's memory (Linux's
// access_process_vm with FOLL_FORCE: ptrace's PEEK and POKE, and
// /proc/<pid>/mem): any mapping may be read, whatever its protection; a
// private mapping may be written even where it is not writable (a
// breakpoint in a program's text), into the process's own copy of the
// page; a shared mapping only where it is writable, since the write would
// reach the file.

// ForceCopyIn copies the memory at addr into dst whatever the mappings'
// protection. It returns how many bytes it copied, and EFAULT if it
// stopped at an address that is not mapped (or past its file's end).
func (m *MemoryManager) ForceCopyIn(addr uintptr, dst []byte) (int, error) {
	unlock := m.lockFor([]Range{{addr, len(dst)}}, false)
	defer unlock()
	done := 0
	for done < len(dst) {
		a := addr + uintptr(done)
		if _, ok := m.vmas.lookup(a); !ok {
			return done, unix.EFAULT
		}
		p, ok := m.pmas.lookup(a)
		if !ok || p.pastEOF {
			return done, unix.EFAULT
		}
		k := min(uintptr(len(dst)-done), p.end-a)
		done += copy(dst[done:], m.mf.Slice(p.off+uint64(a-p.start), uint64(k)))
	}
	return done, nil
}

// ForceCopyOut copies src into the memory at addr: into a private
// mapping whatever its protection (a page shared copy-on-write is copied
// first, and the platform maps the copy with the mapping's protection),
// into a shared one only where it is writable. It returns how many bytes
// it copied, and EFAULT where it stopped.
func (m *MemoryManager) ForceCopyOut(addr uintptr, src []byte) (int, error) {
	if len(src) == 0 {
		return 0, nil
	}
	end := addr + uintptr(len(src))
	hi, ok := pageRoundUp(end)
	if !ok || end < addr {
		return 0, unix.EFAULT
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.fillRangesLocked([]Range{{addr, len(src)}})
	done := 0
	for done < len(src) {
		a := addr + uintptr(done)
		v, ok := m.vmas.lookup(a)
		if !ok || (v.shared && v.prot&platform.ProtWrite == 0) {
			return done, unix.EFAULT
		}
		if err := m.breakCowLocked(max(v.start, pageRoundDown(a)), min(v.end, hi)); err != nil {
			return done, err
		}
		p, ok := m.pmas.lookup(a)
		if !ok || p.pastEOF || p.cow {
			return done, unix.EFAULT
		}
		k := min(uintptr(len(src)-done), p.end-a)
		done += copy(m.mf.Slice(p.off+uint64(a-p.start), uint64(k)), src[done:])
	}
	return done, nil
}
