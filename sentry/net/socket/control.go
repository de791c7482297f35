package socket

import (
	"encoding/binary"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/sentry/kernel"
	"github.com/moat-sandbox/moat/sentry/vfs"
)

// Cmsg is one control message: a cmsghdr's level and type, and its data.
type Cmsg struct {
	Level, Type int
	Data        []byte
}

const (
	cmsgHdr   = unix.SizeofCmsghdr
	cmsgAlign = 8 // CMSG_ALIGN: sizeof(long)
)

func align(n int) int { return (n + cmsgAlign - 1) &^ (cmsgAlign - 1) }

// CmsgLen and CmsgSpace are CMSG_LEN and CMSG_SPACE.
func CmsgLen(n int) int   { return cmsgHdr + n }
func CmsgSpace(n int) int { return cmsgHdr + align(n) }

// ParseCmsgs splits a sendmsg control buffer as Linux walks it
// (for_each_cmsghdr): each header must hold at least itself and fit in
// what is left, else EINVAL.
func ParseCmsgs(buf []byte) ([]Cmsg, error) {
	var out []Cmsg
	for len(buf) >= cmsgHdr {
		n := binary.LittleEndian.Uint64(buf)
		if n < cmsgHdr || n > uint64(len(buf)) {
			return nil, unix.EINVAL
		}
		out = append(out, Cmsg{
			Level: int(int32(binary.LittleEndian.Uint32(buf[8:]))),
			Type:  int(int32(binary.LittleEndian.Uint32(buf[12:]))),
			Data:  buf[cmsgHdr:n],
		})
		next := align(int(n))
		if next >= len(buf) {
			break
		}
		buf = buf[next:]
	}
	return out, nil
}

// MaxRights is SCM_MAX_FD, the most files one message may carry
// (include/net/scm.h).
const MaxRights = 253

// Rights takes the files an SCM_RIGHTS message names, with a reference
// each, as Linux's scm_fp_copy: a message of no fds is ignored, more than
// MaxRights in all is EINVAL, a closed fd EBADF. held are the files the
// earlier SCM_RIGHTS messages of the same call took.
func Rights(t *kernel.Task, c Cmsg, held []*vfs.File) ([]*vfs.File, error) {
	n := len(c.Data) / 4
	if n <= 0 {
		return held, nil
	}
	if len(held)+n > MaxRights {
		return held, unix.EINVAL
	}
	for i := 0; i < n; i++ {
		f, err := t.FDs().Get(int32(binary.LittleEndian.Uint32(c.Data[4*i:])))
		if err != nil {
			return held, err
		}
		held = append(held, f)
	}
	return held, nil
}

// ControlWriter lays out recvmsg's control buffer as Linux's put_cmsg and
// scm_detach_fds do, in room bytes.
type ControlWriter struct {
	room  int
	buf   []byte
	trunc bool
}

// NewControlWriter returns a writer for a control buffer of room bytes.
func NewControlWriter(room int) *ControlWriter { return &ControlWriter{room: room} }

// Put appends one message (put_cmsg): a message that does not fit is cut
// to what is left, with MSG_CTRUNC; no room for a header writes nothing.
func (w *ControlWriter) Put(level, typ int, data []byte) {
	left := w.room - len(w.buf)
	if left < cmsgHdr {
		w.trunc = true
		return
	}
	n := CmsgLen(len(data))
	if left < n {
		w.trunc = true
		n = left
	}
	start := len(w.buf)
	w.putHeader(n, level, typ)
	w.buf = append(w.buf, data[:n-cmsgHdr]...)
	w.padTo(start + min(CmsgSpace(len(data)), left))
}

func (w *ControlWriter) putHeader(n, level, typ int) {
	var h [cmsgHdr]byte
	binary.LittleEndian.PutUint64(h[:], uint64(n))
	binary.LittleEndian.PutUint32(h[8:], uint32(level))
	binary.LittleEndian.PutUint32(h[12:], uint32(typ))
	w.buf = append(w.buf, h[:]...)
}

// padTo extends the buffer with zeros to end bytes: a message takes its
// CMSG_SPACE, or what was left.
func (w *ControlWriter) padTo(end int) {
	for len(w.buf) < end {
		w.buf = append(w.buf, 0)
	}
}

// PutRights installs files in the receiving task's table as fds, as many
// as the room left holds (scm_detach_fds), close-on-exec with
// MSG_CMSG_CLOEXEC, and writes their SCM_RIGHTS message. Files that do not
// fit, or find no free fd, are released and the message is MSG_CTRUNC.
func (w *ControlWriter) PutRights(t *kernel.Task, files []*vfs.File, cloexec bool, limit uint64) {
	if len(files) == 0 {
		return
	}
	left := w.room - len(w.buf)
	max := 0
	if left > cmsgHdr {
		max = (left - cmsgHdr) / 4
	}
	var fds []byte
	i := 0
	for ; i < len(files) && i < max; i++ {
		fd, err := t.FDs().Install(files[i], 0, cloexec, limit)
		if err != nil {
			break
		}
		fds = binary.LittleEndian.AppendUint32(fds, uint32(fd))
	}
	if i > 0 {
		start := len(w.buf)
		w.putHeader(CmsgLen(len(fds)), unix.SOL_SOCKET, unix.SCM_RIGHTS)
		w.buf = append(w.buf, fds...)
		w.padTo(start + min(CmsgSpace(len(fds)), left))
	}
	if i < len(files) {
		w.trunc = true
	}
	for _, f := range files {
		f.DecRef() // the table holds its own reference to those installed
	}
}

// Bytes returns the control buffer's contents (msg_controllen is its
// length).
func (w *ControlWriter) Bytes() []byte { return w.buf }

// Truncated reports whether something did not fit (MSG_CTRUNC).
func (w *ControlWriter) Truncated() bool { return w.trunc }

// PutInt32 encodes an int option value.
func PutInt32(v int32) []byte { return binary.LittleEndian.AppendUint32(nil, uint32(v)) }

// Int32 decodes an int option value: setsockopt's optlen must hold an
// int, as sock_setsockopt asks (EINVAL).
func Int32(val []byte) (int32, error) {
	if len(val) < 4 {
		return 0, unix.EINVAL
	}
	return int32(binary.LittleEndian.Uint32(val)), nil
}

// Bool is Int32 as a flag.
func Bool(val []byte) (bool, error) {
	v, err := Int32(val)
	return v != 0, err
}

// PutBool encodes a flag option.
func PutBool(b bool) []byte {
	if b {
		return PutInt32(1)
	}
	return PutInt32(0)
}
