// Package syscalls is the system call table and its handlers: one table of
// x86-64 numbers, each entry with a handler, a support level and a note, and
// a file of handlers per family of calls. Handlers decode and check their
// arguments, then call into the kernel, vfs and mm; they hold no state.
// docs/syscalls.md is generated from the table; names.go (the numbers' names)
// by `go run ./syscalls/internal/gennames` from golang.org/x/sys/unix.
package syscalls

import (
	"fmt"
	"sync/atomic"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/sentry/arch"
	"github.com/moat-sandbox/moat/sentry/kernel"
)

// Handler serves one system call. It returns the value for rax or an error:
// a unix.Errno becomes -errno, kernel.ErrNoReturn leaves the registers alone.
type Handler func(t *kernel.Task, args *arch.SyscallArgs) (uintptr, error)

// Support says how completely a call follows Linux.
type Support int

// Support levels.
const (
	None    Support = iota // answers the Errno of its row; Why says why
	Partial                // works, with the differences in Note
	Full                   // behaves as Linux does
)

func (s Support) String() string {
	return [...]string{"none", "partial", "full"}[s]
}

// Reason says why a call is not supported.
type Reason int

// Reasons, for calls of support None.
const (
	// NotYet: moat lacks the call for now and answers ENOSYS; the note
	// names the area or issue that brings it.
	NotYet Reason = iota + 1
	// ByDesign: a sandboxed guest never gets the call; it answers the
	// errno Linux gives a program in an unprivileged container.
	ByDesign
	// NeedsPrivilege: the call needs a capability whose use the sandbox
	// never grants, whatever the container's capabilities say; it answers
	// the errno Linux gives without the capability.
	NeedsPrivilege
)

func (r Reason) String() string {
	return [...]string{"", "not yet", "by design", "needs privilege"}[r]
}

// Entry is one row of the table.
type Entry struct {
	Name    string
	Fn      Handler // nil for None
	Support Support
	Note    string
	Why     Reason     // for None
	Errno   unix.Errno // for None: what the call answers
}

func full(name string, fn Handler) Entry { return Entry{Name: name, Fn: fn, Support: Full} }
func partial(name string, fn Handler, note string) Entry {
	return Entry{Name: name, Fn: fn, Support: Partial, Note: note}
}

// notYet is a call moat lacks for now; area says what brings it.
func notYet(name, area string) Entry {
	return unsupported(name, NotYet, unix.ENOSYS, area)
}

// byDesign is a call a sandboxed guest never gets.
func byDesign(name string, errno unix.Errno, why string) Entry {
	return unsupported(name, ByDesign, errno, why)
}

// needsPrivilege is a call that needs capability, which the sandbox never
// lets a guest use; errno is Linux's answer without it.
func needsPrivilege(name string, errno unix.Errno, capability, note string) Entry {
	why := capability + " (never granted in the sandbox)"
	if note != "" {
		why += ", " + note
	}
	return unsupported(name, NeedsPrivilege, errno, why)
}

// unsupported is a row of support None. Its note starts with the reason
// and the errno, so that docs/syscalls.md shows both.
func unsupported(name string, why Reason, errno unix.Errno, note string) Entry {
	return Entry{Name: name, Support: None, Why: why, Errno: errno,
		Note: fmt.Sprintf("%s (%s): %s", why, unix.ErrnoName(errno), note)}
}

// Table is the dispatcher the kernel calls.
type Table struct {
	logged [len(names)]atomic.Bool
}

var _ kernel.SyscallTable = (*Table)(nil)

// NewTable returns the dispatcher for the x86-64 table.
func NewTable() *Table { return &Table{} }

// Call implements kernel.SyscallTable. A call of support None answers
// its row's errno (ENOSYS without a row) and is logged once per number.
func (tb *Table) Call(t *kernel.Task, nr uintptr, args *arch.SyscallArgs) (uintptr, error) {
	errno, why := unix.ENOSYS, NotYet
	if nr < uintptr(len(table)) {
		e := &table[nr]
		if e.Fn != nil {
			return e.Fn(t, args)
		}
		if e.Name != "" {
			errno, why = e.Errno, e.Why
		}
	}
	if nr < uintptr(len(tb.logged)) && !tb.logged[nr].Swap(true) {
		t.Log("unsupported syscall %s (%d): %s, %s", Name(nr), nr, why, unix.ErrnoName(errno))
	}
	return 0, errno
}

// Name returns the name of call nr.
func Name(nr uintptr) string {
	if nr < uintptr(len(names)) && names[nr] != "" {
		return names[nr]
	}
	return "unknown"
}

// Entries returns the table's rows by number, for documentation.
func Entries() map[uintptr]Entry {
	out := make(map[uintptr]Entry)
	for nr, name := range names {
		if name == "" {
			continue
		}
		e := Entry{Name: name}
		if nr < len(table) && table[nr].Name != "" {
			e = table[nr]
		}
		out[uintptr(nr)] = e
	}
	return out
}
