package control

import (
	"encoding/json"
	"syscall"
)

// File operations: `moat serve` acts on a sandbox's files through these,
// answered by the sentry on its own VFS (the gofer behind the root), with
// the permissions of the user the request names, so that nothing of the
// image (no cat, find or rm) has to exist or be trusted.
const (
	OpStat   = "stat"   // the entry of File.Path, not following a final symlink
	OpList   = "list"   // the entries below the directory File.Path, File.Depth levels deep
	OpMkdir  = "mkdir"  // File.Path and its missing parents, as mkdir -p
	OpRename = "rename" // File.Path to File.To, making To's missing parents
	OpRemove = "remove" // File.Path, and what it holds, as rm -rf
	// OpRead and OpWrite stream a file's data through the one descriptor
	// that comes with the request (a pipe): OpRead writes the file to it,
	// OpWrite reads it to its end into the file (created with File.Mode,
	// or truncated, its missing parents made). The sentry answers twice,
	// as for OpExec: once the file is open (for OpRead with its entry),
	// and once the data has gone through.
	OpRead  = "read"
	OpWrite = "write"
)

// FileOp is a file operation's arguments and the user it acts as.
type FileOp struct {
	Path  string   `json:"path"`            // absolute, in the sandbox
	To    string   `json:"to,omitempty"`    // OpRename: the new path
	Depth int      `json:"depth,omitempty"` // OpList: 1 lists the directory's own entries
	Mode  uint32   `json:"mode,omitempty"`  // OpWrite: permission bits of a new file
	User  FileUser `json:"user"`
}

// FileUser is who a file operation acts as: its ids and effective
// capabilities ("CAP_DAC_OVERRIDE", ...), which the permission checks
// and the owner of what it makes follow.
type FileUser struct {
	UID    uint32   `json:"uid"`
	GID    uint32   `json:"gid"`
	Groups []uint32 `json:"groups,omitempty"`
	Caps   []string `json:"caps,omitempty"`
}

// FileEntry is one file as OpStat, OpList and OpRead report it.
type FileEntry struct {
	Path   string `json:"path"`
	Mode   uint32 `json:"mode"` // st_mode: type and permission bits
	Size   int64  `json:"size"`
	UID    uint32 `json:"uid"`
	GID    uint32 `json:"gid"`
	Mtime  int64  `json:"mtime"`            // ns since the epoch
	Target string `json:"target,omitempty"` // a symlink's
}

// MaxEntriesSize is how many bytes of entries, as EntrySize counts
// them, an answer's Entries may hold for the answer to stay within
// MaxMessage: the rest of it is `{"entries":[` and `]}`.
const MaxEntriesSize = MaxMessage - len(`{"entries":[]}`)

// EntrySize is what e adds to an answer's Entries: its JSON, and the
// comma after it (the last one has none, so the sum is one over).
func EntrySize(e FileEntry) int {
	// Strings and integers only: Marshal cannot fail (a string that is
	// not UTF-8 is encoded with U+FFFD in its place).
	b, _ := json.Marshal(e)
	return len(b) + 1
}

// Error is a failed request's error: the sentry's message, and the
// Linux errno when the failure is one (a file operation's), which
// errors.Is matches against a syscall.Errno.
type Error struct {
	Msg   string
	Errno syscall.Errno
	// Unrunnable: see Response.
	Unrunnable bool
}

func (e *Error) Error() string { return e.Msg }

func (e *Error) Unwrap() error {
	if e.Errno == 0 {
		return nil
	}
	return e.Errno
}
