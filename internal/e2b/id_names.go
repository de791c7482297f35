package e2b

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strconv"
	"sync"
	"time"

	"github.com/moat-sandbox/moat/internal/control"
)

// The owner and group envd reports of a file are the names the sandbox's
// /etc/passwd and /etc/group give its ids, or the ids as numbers where
// they give none, as envd's lookups (os/user) have them. Both files are
// the guest's, so untrusted text: each is read up to maxIDFile, and a
// line that does not parse is passed over.

// maxIDFile bounds how much of /etc/passwd or /etc/group is read.
const maxIDFile = 1 << 20

// maxIDName bounds a name taken from them: useradd's limit is 32, and a
// longer one is no account's.
const maxIDName = 256

// idNames maps ids to names: users' and groups'.
type idNames struct {
	users, groups map[uint32]string
}

// owner and group are the names of e's ids.
func (n idNames) owner(e control.FileEntry) string { return nameOf(n.users, e.UID) }
func (n idNames) group(e control.FileEntry) string { return nameOf(n.groups, e.GID) }

func nameOf(names map[uint32]string, id uint32) string {
	if name, ok := names[id]; ok {
		return name
	}
	return strconv.FormatUint(uint64(id), 10)
}

// idNamesFresh is how long the names read for one request serve later
// ones: a listing then costs one call into the sandbox, not three, and
// a change to /etc/passwd shows within this long.
const idNamesFresh = time.Second

// namesCache is the names last read of a sandbox's files.
type namesCache struct {
	mu    sync.Mutex
	names idNames
	read  time.Time // zero: never
}

// idNames are the sandbox's names of ids, read at most idNamesFresh ago.
func (sb *sandbox) idNames(ctx context.Context) idNames {
	c := &sb.names
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.read.IsZero() || time.Since(c.read) >= idNamesFresh {
		names, settled := sb.readIDNames(ctx)
		if !settled {
			return names // this request's answer; the next one reads again
		}
		c.names, c.read = names, time.Now()
	}
	return c.names
}

// readIDNames reads the sandbox's /etc/passwd and /etc/group as root (as
// envd reads them); one that cannot be read names nothing. settled says
// what was read is the files' answer (read, missing, unreadable or too
// long), not a request's failure (cancelled, timed out), and may serve
// other requests.
func (sb *sandbox) readIDNames(ctx context.Context) (names idNames, settled bool) {
	root := fileUser(guestUser{name: "root"})
	settled = true
	read := func(p string) map[uint32]string {
		var b limitedBytes
		err := sb.inst.readFile(ctx, root, p, func(control.FileEntry) io.Writer { return &b })
		var cerr *control.Error
		if err != nil && !errors.As(err, &cerr) && !errors.Is(err, errIDFileTooLong) {
			settled = false
		}
		return parseIDFile(b.buf.Bytes(), b.cut)
	}
	return idNames{users: read("/etc/passwd"), groups: read("/etc/group")}, settled
}

// parseIDFile maps the ids of /etc/passwd's or /etc/group's lines
// (name:password:id:...) to their names, the first line's for an id, as
// getpwuid finds it. The last line, when cut says maxIDFile cut it off,
// is left out.
func parseIDFile(data []byte, cut bool) map[uint32]string {
	names := make(map[uint32]string)
	for len(data) > 0 {
		line, rest, complete := bytes.Cut(data, []byte("\n"))
		data = rest
		if !complete && cut {
			break
		}
		f := bytes.SplitN(line, []byte(":"), 4)
		if len(f) < 4 || len(f[0]) == 0 || len(f[0]) > maxIDName || f[0][0] == '#' || f[0][0] == '+' || f[0][0] == '-' {
			continue // not an entry, or NIS's compat lines
		}
		id, err := strconv.ParseUint(string(f[2]), 10, 32)
		if err != nil {
			continue
		}
		if _, seen := names[uint32(id)]; !seen {
			names[uint32(id)] = string(f[0])
		}
	}
	return names
}

// limitedBytes keeps what is written to it up to maxIDFile, and fails a
// write past it, which ends the read.
type limitedBytes struct {
	buf bytes.Buffer
	cut bool // something past maxIDFile was left out
}

var errIDFileTooLong = errors.New("longer than an id file is read")

func (l *limitedBytes) Write(p []byte) (int, error) {
	room := maxIDFile - l.buf.Len()
	if len(p) > room {
		l.cut = true
		l.buf.Write(p[:room])
		return room, errIDFileTooLong
	}
	return l.buf.Write(p)
}
