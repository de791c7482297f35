package kernel

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"strings"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/internal/linuxabi"
	"github.com/moat-sandbox/moat/platform"
	"github.com/moat-sandbox/moat/sentry/mm"
	"github.com/moat-sandbox/moat/sentry/vfs"
)

// Core dumps. A process killed by a signal whose default action is to
// dump core writes an ELF core file, as Linux does with its default
// core_pattern: "core" in the working directory of the thread that took
// the signal, made afresh (an old one is unlinked first), mode 0600 less
// the umask, owned by the thread's fsuid; nothing when the process is not
// dumpable or RLIMIT_CORE is under a page. The file holds the thread's
// registers (NT_PRSTATUS, NT_PRFPREG), the process (NT_PRPSINFO), the
// signal (NT_SIGINFO) and the auxiliary vector (NT_AUXV), and the memory
// Linux's default coredump_filter keeps: anonymous memory, private file
// mappings the process may have written, shared memory no file name
// reaches, the vDSO, and the first page of a mapped ELF file; pages that
// were never touched are holes. RLIMIT_CORE bounds the bytes written: a
// dump that does not fit is cut there. Once the file is made the wait
// status says core dumped (WCOREDUMP, CLD_DUMPED), cut or not, as on
// Linux 6.x.

// killedCode is waitid's and SIGCHLD's si_code for a process a signal
// killed.
func (s ExitStatus) killedCode() int32 {
	if s.Core {
		return linuxabi.CLD_DUMPED
	}
	return linuxabi.CLD_KILLED
}

// CorePattern is the file a dump goes to (Linux's default core_pattern,
// which /proc/sys/kernel/core_pattern shows).
const CorePattern = "core"

// coreMaxChunk is how much memory a dump copies at once.
const coreMaxChunk = 64 * mm.PageSize

// dumpCore writes the process's core for the signal info that kills it
// and reports whether it made the file. t is the thread that took the
// signal; the process is exiting.
func (t *Task) dumpCore(info *SigInfo) bool {
	limit := t.Limits().Get(unix.RLIMIT_CORE).Cur
	if t.Prctl().Dumpable != 1 || limit < mm.PageSize {
		return false
	}
	maps := t.mm.Maps()
	segs := make([]coreSegment, len(maps))
	for i, m := range maps {
		segs[i] = coreSegment{MapInfo: m, size: t.coreDumpSize(m)}
	}
	notes := t.coreNotes(info)
	headers := uint64(64 + 56*(1+len(segs)))
	notesOff := headers
	off := pageRoundUp(notesOff + uint64(len(notes)))
	var hdr bytes.Buffer
	le := binary.LittleEndian
	binary.Write(&hdr, le, elf.Header64{
		Ident: [elf.EI_NIDENT]byte{0x7f, 'E', 'L', 'F', byte(elf.ELFCLASS64), byte(elf.ELFDATA2LSB), byte(elf.EV_CURRENT)},
		Type:  uint16(elf.ET_CORE), Machine: uint16(elf.EM_X86_64), Version: uint32(elf.EV_CURRENT),
		Phoff: 64, Ehsize: 64, Phentsize: 56, Phnum: uint16(1 + len(segs)), Shentsize: 64,
	})
	binary.Write(&hdr, le, elf.Prog64{Type: uint32(elf.PT_NOTE), Off: notesOff, Filesz: uint64(len(notes)), Align: 4})
	for i := range segs {
		s := &segs[i]
		s.off = off
		var flags elf.ProgFlag
		if s.Prot&platform.ProtRead != 0 {
			flags |= elf.PF_R
		}
		if s.Prot&platform.ProtWrite != 0 {
			flags |= elf.PF_W
		}
		if s.Prot&platform.ProtExec != 0 {
			flags |= elf.PF_X
		}
		binary.Write(&hdr, le, elf.Prog64{Type: uint32(elf.PT_LOAD), Flags: uint32(flags), Off: off,
			Vaddr: uint64(s.Start), Filesz: s.size, Memsz: uint64(s.End - s.Start), Align: mm.PageSize})
		off += s.size
	}
	f, err := t.createCoreFile()
	if err != nil {
		t.Log("core dump: %v", err)
		return false
	}
	defer f.DecRef()
	w := coreWriter{f: f, limit: limit}
	if !w.write(hdr.Bytes(), 0) || !w.write(notes, notesOff) {
		return true
	}
	for _, s := range segs {
		if !t.dumpSegment(&w, s) {
			return true
		}
	}
	// Pages left out at the end are a hole the file's size must cover.
	if w.end < off {
		w.write([]byte{0}, off-1)
	}
	return true
}

// coreSegment is a mapping and how much of it the dump holds.
type coreSegment struct {
	mm.MapInfo
	size uint64 // bytes from the start of the mapping
	off  uint64 // where in the file
}

// coreWriter writes a dump within RLIMIT_CORE.
type coreWriter struct {
	f            *vfs.File
	limit        uint64
	written, end uint64
}

// write writes b at off, unless that would pass the limit.
func (w *coreWriter) write(b []byte, off uint64) bool {
	if w.written+uint64(len(b)) > w.limit {
		return false
	}
	n, err := w.f.Pwrite(vfs.NewIOSeqBuffer(b), int64(off))
	w.written += uint64(n)
	w.end = max(w.end, off+uint64(n))
	return err == nil && n == len(b)
}

// dumpSegment writes the pages of s that exist.
func (t *Task) dumpSegment(w *coreWriter, s coreSegment) bool {
	if s.size == 0 {
		return true
	}
	resident, err := t.mm.Residency(s.Start, uintptr(s.size))
	if err != nil {
		return true // unmapped meanwhile: a hole
	}
	if s.size == mm.PageSize && strings.HasPrefix(s.Name, "/") {
		resident = []byte{1} // an ELF file's header page, read from the file
	}
	buf := make([]byte, coreMaxChunk)
	for i := 0; i < len(resident); {
		if resident[i]&1 == 0 {
			i++
			continue
		}
		j := i
		for j < len(resident) && resident[j]&1 != 0 && (j-i)*mm.PageSize < coreMaxChunk {
			j++
		}
		chunk := buf[:(j-i)*mm.PageSize]
		if _, err := t.mm.ForceCopyIn(s.Start+uintptr(i*mm.PageSize), chunk); err != nil {
			clear(chunk) // memory the dump cannot read is written as zeros, as Linux's dump_page
		}
		if !w.write(chunk, s.off+uint64(i*mm.PageSize)) {
			return false
		}
		i = j
	}
	return true
}

// coreDumpSize is how much of mapping m a dump holds, as Linux's
// vma_dump_size decides with coredump_filter's default (anonymous memory
// private and shared, ELF headers).
func (t *Task) coreDumpSize(m mm.MapInfo) uint64 {
	size := uint64(m.End - m.Start)
	switch {
	case m.Name == "[vvar]" || m.Name == "[vsyscall]":
		return 0
	case m.Name == "[vdso]":
		return size
	case !strings.HasPrefix(m.Name, "/"): // anonymous, the heap, the stack
		if m.Prot == 0 {
			return 0 // a reservation or a guard: never touched
		}
		return size
	case m.Shared:
		// Shared memory no name reaches (/dev/zero, System V, memfd once
		// unlinked) is anonymous shared memory; a file's is not kept.
		if strings.HasSuffix(m.Name, " (deleted)") {
			return size
		}
		return 0
	case m.Prot&platform.ProtWrite != 0:
		return size // a private mapping the process may have written
	case m.Offset == 0 && m.Prot&platform.ProtRead != 0:
		var magic [4]byte
		if _, err := t.mm.ForceCopyIn(m.Start, magic[:]); err == nil && string(magic[:]) == elf.ELFMAG {
			return mm.PageSize
		}
	}
	return 0
}

// createCoreFile makes the dump's file in t's working directory.
func (t *Task) createCoreFile() (*vfs.File, error) {
	_, cwd := t.fs.Get()
	res := t.Resolver(cwd)
	creds := &res.Creds
	if target, err := res.LookupTarget(CorePattern); err == nil {
		vfs.Unlink(creds, target) // as Linux: if there was none, or it stays, the create says
	}
	_, target, err := res.LookupCreate(CorePattern, false)
	if err != nil {
		return nil, err
	}
	if target.Dir.Dentry == nil {
		return nil, unix.EEXIST
	}
	p, err := vfs.Create(creds, target, 0o600&^t.fs.Umask())
	if err != nil {
		return nil, err
	}
	impl, err := p.Dentry.Inode().Open(unix.O_WRONLY)
	if err != nil {
		return nil, err
	}
	return vfs.NewFile(impl, p, unix.O_WRONLY|linuxabi.O_LARGEFILE), nil
}

// coreNotes are the dump's notes: the thread's registers, the process,
// the signal, the auxiliary vector, the thread's floating-point state.
func (t *Task) coreNotes(info *SigInfo) []byte {
	var b bytes.Buffer
	user, sys := t.CPUTime()
	regs := (&Tracee{t: t}).Regs()
	pr := elfPrstatus{
		Signo: info.Signo, Code: info.Code, Errno: info.Errno, Cursig: int16(info.Signo),
		Sigpend: t.pending.mask | t.tg.pending.mask, Sighold: t.SigMask(),
		Pid: t.vtid, Ppid: t.PPID(), Pgrp: t.PGID(), Sid: t.SID(),
		Utime: timeval(user), Stime: timeval(sys), Reg: regs, Fpvalid: 1,
	}
	coreNote(&b, "CORE", unix.NT_PRSTATUS, structBytes(&pr))

	c := t.creds
	c.Lock()
	uid, gid := c.UID, c.GID
	c.Unlock()
	ps := elfPrpsinfo{State: 0, Sname: 'R', Uid: uid, Gid: gid, Pid: t.tg.vpid, Ppid: t.PPID(),
		Pgrp: t.PGID(), Sid: t.SID()}
	copy(ps.Fname[:len(ps.Fname)-1], t.Comm())
	if args, err := t.coreArgs(); err == nil {
		copy(ps.Psargs[:len(ps.Psargs)-1], args)
	}
	coreNote(&b, "CORE", unix.NT_PRPSINFO, structBytes(&ps))

	si := *info
	coreNote(&b, "CORE", unix.NT_SIGINFO, structBytes(&si))

	l := t.mm.Layout
	if l.AuxvEnd > l.AuxvStart {
		auxv := make([]byte, l.AuxvEnd-l.AuxvStart)
		if _, err := t.mm.ForceCopyIn(l.AuxvStart, auxv); err == nil {
			coreNote(&b, "CORE", unix.NT_AUXV, auxv)
		}
	}
	if fp := t.ctx.FPState(); len(fp) >= 512 {
		coreNote(&b, "CORE", unix.NT_PRFPREG, fp[:512])
	}
	return b.Bytes()
}

// coreArgs is the command line with its NULs as spaces (pr_psargs).
func (t *Task) coreArgs() (string, error) {
	l := t.mm.Layout
	n := min(l.ArgEnd-l.ArgStart, 80)
	b := make([]byte, n)
	if _, err := t.mm.ForceCopyIn(l.ArgStart, b); err != nil {
		return "", err
	}
	return strings.TrimRight(strings.ReplaceAll(string(b), "\x00", " "), " "), nil
}

// coreNote appends an ELF note: its name and description, each padded
// to 4 bytes.
func coreNote(b *bytes.Buffer, name string, typ uint32, desc []byte) {
	le := binary.LittleEndian
	binary.Write(b, le, [3]uint32{uint32(len(name) + 1), uint32(len(desc)), typ})
	b.WriteString(name)
	b.Write(make([]byte, pad4(len(name)+1)-len(name)))
	b.Write(desc)
	b.Write(make([]byte, pad4(len(desc))-len(desc)))
}

func pad4(n int) int { return (n + 3) &^ 3 }

func pageRoundUp(n uint64) uint64 { return (n + mm.PageSize - 1) &^ (mm.PageSize - 1) }

func timeval(d time.Duration) unix.Timeval { return unix.NsecToTimeval(int64(d)) }

// structBytes views a fixed-layout struct as its bytes.
func structBytes[T any](v *T) []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(v)), unsafe.Sizeof(*v))
}

// elfPrstatus is struct elf_prstatus (x86-64).
type elfPrstatus struct {
	Signo, Code, Errno int32 // struct elf_siginfo
	Cursig             int16
	_                  [2]byte
	Sigpend, Sighold   uint64
	Pid, Ppid          int32
	Pgrp, Sid          int32
	Utime, Stime       unix.Timeval
	Cutime, Cstime     unix.Timeval
	Reg                UserRegs
	Fpvalid            int32
	_                  [4]byte
}

// elfPrpsinfo is struct elf_prpsinfo (x86-64).
type elfPrpsinfo struct {
	State, Sname, Zomb, Nice byte
	_                        [4]byte
	Flag                     uint64
	Uid, Gid                 uint32
	Pid, Ppid, Pgrp, Sid     int32
	Fname                    [16]byte
	Psargs                   [80]byte
}

var (
	_ [336 - unsafe.Sizeof(elfPrstatus{})]byte
	_ [unsafe.Sizeof(elfPrstatus{}) - 336]byte
	_ [136 - unsafe.Sizeof(elfPrpsinfo{})]byte
	_ [unsafe.Sizeof(elfPrpsinfo{}) - 136]byte
	_ [128 - unsafe.Sizeof(SigInfo{})]byte
)
