package kernel

import (
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/internal/linuxabi"
	"github.com/moat-sandbox/moat/sentry/vfs"
)

// dnotify, fcntl(F_NOTIFY): a process asks to be sent SIGIO when what is
// in a directory changes. Each request is one inotify watch of the
// directory (vfs's watches see the events dnotify needs), owned by the
// open file and the descriptor table it was made through, as Linux keys a
// dnotify_struct: closing any descriptor of the file in that table ends it
// (dnotify_flush), and a second request through the same pair adds to its
// events. Without DN_MULTISHOT it ends after its first signal.

// The DN_ bits of linux/fcntl.h (golang.org/x/sys/unix has none).
const (
	dnAccess    = 0x1
	dnModify    = 0x2
	dnCreate    = 0x4
	dnDelete    = 0x8
	dnRename    = 0x10
	dnAttrib    = 0x20
	dnMultishot = 0x80000000
)

// dnKey is what a request belongs to.
type dnKey struct {
	file  *vfs.File
	table *FDTable
}

// dnRequest is one F_NOTIFY request: a vfs watch owner that signals the
// process.
type dnRequest struct {
	key  dnKey
	tg   *ThreadGroup // the process that asked, which the signal goes to
	mask uint32       // DN_ bits; dnotify.mu
}

var dnotify = struct {
	mu   sync.Mutex
	reqs map[dnKey]*dnRequest
	// count is len(reqs): with none, a close costs one load here.
	count atomic.Int64
}{reqs: make(map[dnKey]*dnRequest)}

// dnEvents maps DN_ bits to the inotify events that raise them, as Linux's
// convert_arg does; a rename into or out of the directory is DN_RENAME.
func dnEvents(mask uint32) uint32 {
	var in uint32
	for _, m := range []struct{ dn, in uint32 }{
		{dnAccess, unix.IN_ACCESS},
		{dnModify, unix.IN_MODIFY},
		{dnCreate, unix.IN_CREATE | unix.IN_MOVED_TO},
		{dnDelete, unix.IN_DELETE | unix.IN_MOVED_FROM},
		{dnRename, unix.IN_MOVED_FROM | unix.IN_MOVED_TO},
		{dnAttrib, unix.IN_ATTRIB},
	} {
		if mask&m.dn != 0 {
			in |= m.in
		}
	}
	if mask&dnMultishot == 0 {
		in |= unix.IN_ONESHOT
	}
	return in
}

// DirNotify is fcntl(F_NOTIFY) on f, a descriptor of t's: signal t's
// process on the changes arg's DN_ bits name, or, with none of them, stop.
// Bits dnotify does not know are ignored, as Linux ignores them.
func (t *Task) DirNotify(f *vfs.File, arg uint32) error {
	key := dnKey{file: f, table: t.fds}
	if arg&^dnMultishot == 0 {
		dnotifyFlush(f, t.fds)
		return nil
	}
	st, err := f.Stat()
	if err != nil {
		return err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return unix.ENOTDIR
	}
	id, err := vfs.WatchID(f.Path())
	if err != nil {
		return err
	}
	dnotify.mu.Lock()
	r := dnotify.reqs[key]
	if r == nil {
		r = &dnRequest{key: key, tg: t.tg}
		dnotify.reqs[key] = r
		dnotify.count.Add(1)
	}
	r.mask |= arg
	mask := r.mask
	dnotify.mu.Unlock()
	// vfs's lock is taken without dnotify's: removing a watch calls
	// Queue, which takes dnotify's.
	_, err = vfs.AddWatch(r, id, dnEvents(mask))
	return err
}

// dnotifyFlush ends the request made through f and table, if any: one of
// f's descriptors in table is being closed. Its watch goes with it, and
// vfs forgets it as an owner of watches.
func dnotifyFlush(f *vfs.File, table *FDTable) {
	if dnotify.count.Load() == 0 {
		return
	}
	dnotify.mu.Lock()
	r := dnotify.reqs[dnKey{file: f, table: table}]
	if r != nil {
		delete(dnotify.reqs, r.key)
		dnotify.count.Add(-1)
	}
	dnotify.mu.Unlock()
	if r != nil {
		vfs.RemoveOwner(r)
	}
}

// Queue implements vfs.WatchOwner: an event of the directory sends SIGIO
// (SI_KERNEL, as Linux's send_sigio without F_SETSIG). The watch's end
// (IN_IGNORED: a one-shot request fired, or the directory is gone) leaves
// the request without events, so that asking again starts afresh; it is
// forgotten at the close (vfs's lock is held here, so RemoveOwner cannot
// be).
func (r *dnRequest) Queue(ev vfs.WatchEvent) {
	if ev.Mask&unix.IN_IGNORED != 0 {
		dnotify.mu.Lock()
		r.mask = 0
		dnotify.mu.Unlock()
		return
	}
	r.tg.SendSignal(SigInfo{Signo: int32(unix.SIGIO), Code: linuxabi.SI_KERNEL})
}
