// Package syscalls is the system call table and its handlers: one table of
// x86-64 numbers, each entry with a handler, a support level and a note, and
// a file of handlers per family of calls. Handlers decode and check their
// arguments, then call into the kernel, vfs and mm; they hold no state.
// docs/syscalls.md is generated from the table; names.go (the numbers' names)
// by `go run ./syscalls/internal/gennames` from golang.org/x/sys/unix.
package syscalls

import (
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
	None    Support = iota // answers ENOSYS (or the errno in Note)
	Partial                // works, with the differences in Note
	Full                   // behaves as Linux does
)

func (s Support) String() string {
	return [...]string{"none", "partial", "full"}[s]
}

// Entry is one row of the table.
type Entry struct {
	Name    string
	Fn      Handler
	Support Support
	Note    string
}

func full(name string, fn Handler) Entry { return Entry{name, fn, Full, ""} }
func partial(name string, fn Handler, note string) Entry {
	return Entry{name, fn, Partial, note}
}

// unsupported is an entry that answers errno and says why.
func unsupported(name string, errno unix.Errno, note string) Entry {
	return Entry{name, func(*kernel.Task, *arch.SyscallArgs) (uintptr, error) { return 0, errno }, None, note}
}

// Table is the dispatcher the kernel calls.
type Table struct {
	logged [len(names)]atomic.Bool
}

var _ kernel.SyscallTable = (*Table)(nil)

// NewTable returns the dispatcher for the x86-64 table.
func NewTable() *Table { return &Table{} }

// Call implements kernel.SyscallTable.
func (tb *Table) Call(t *kernel.Task, nr uintptr, args *arch.SyscallArgs) (uintptr, error) {
	if nr < uintptr(len(table)) {
		if fn := table[nr].Fn; fn != nil {
			return fn(t, args)
		}
	}
	if nr < uintptr(len(tb.logged)) && !tb.logged[nr].Swap(true) {
		t.Log("unsupported syscall %s (%d)", Name(nr), nr)
	}
	return 0, unix.ENOSYS
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
