package control

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// Conn is a control connection that lasts beyond one answer (OpExec),
// and whose first message may carry descriptors. Messages are JSON
// values, one per line.
type Conn struct {
	uc  *net.UnixConn
	buf []byte // read past the last message
}

// maxFDs bounds the descriptors one message carries: three for stdio
// and what --preserve-fds asks, which Linux caps at SCM_MAX_FD (253).
const maxFDs = 253

// MaxMessage bounds one message, its newline not counted, so that a
// peer cannot make Receive hold any amount: an answer can carry what the
// guest controls (an OpList of a directory the guest filled). The
// largest legitimate messages are an OpList answer of a big tree (an
// entry is some 100 bytes plus its path's: the Linux source tree, 90,000
// entries, lists in about 12 MiB; a recursive WatchDir lists a whole
// tree every poll) and an OpExec request, whose arguments and
// environment Linux caps at 6 MiB (3/4 of _STK_LIM) before JSON's
// escaping. 64 MiB holds either several times over, and keeps what one
// call can make `moat serve` hold (the message, its entries decoded and
// re-encoded for envd) in the low hundreds of MiB.
const MaxMessage = 64 << 20

// errMessageTooLong is the error of a message past MaxMessage.
var errMessageTooLong = fmt.Errorf("control message longer than %d bytes (%d MiB), the most one may be", MaxMessage, MaxMessage>>20)

// Dial connects to the control socket at path.
func Dial(path string, timeout time.Duration) (*Conn, error) {
	c, err := net.DialTimeout("unix", path, timeout)
	if err != nil {
		return nil, fmt.Errorf("connect to sandbox control socket: %w", err)
	}
	return &Conn{uc: c.(*net.UnixConn)}, nil
}

// NewConn wraps an accepted or inherited connection.
func NewConn(uc *net.UnixConn) *Conn { return &Conn{uc: uc} }

// Handover returns what a child process needs to take the connection
// over: a duplicate of its descriptor and the bytes already read past
// the last message. Those bytes matter: one read may have taken the
// next message too (an exec'd process that exits at once has its exit
// status right behind the exec's answer), and without them the child
// would wait for a message that never comes.
func (c *Conn) Handover() (*os.File, []byte, error) {
	f, err := c.uc.File()
	if err != nil {
		return nil, nil, err
	}
	return f, append([]byte(nil), c.buf...), nil
}

// SetDeadline bounds the next reads and writes; zero removes the bound.
func (c *Conn) SetDeadline(t time.Time) error { return c.uc.SetDeadline(t) }

// Close closes the connection.
func (c *Conn) Close() error { return c.uc.Close() }

// Send writes v as one message, with files as SCM_RIGHTS on its first
// byte.
func (c *Conn) Send(v any, files ...*os.File) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	if len(data) > MaxMessage {
		return errMessageTooLong // the peer's Receive would refuse it
	}
	data = append(data, '\n')
	if len(files) > maxFDs {
		return fmt.Errorf("%d descriptors to pass: at most %d fit in one message", len(files), maxFDs)
	}
	var oob []byte
	if len(files) > 0 {
		fds := make([]int, len(files))
		for i, f := range files {
			fds[i] = int(f.Fd())
		}
		oob = unix.UnixRights(fds...)
	}
	n, _, err := c.uc.WriteMsgUnix(data, oob, nil)
	if err != nil {
		return err
	}
	if n < len(data) {
		_, err = c.uc.Write(data[n:])
	}
	return err
}

// Receive reads one message into v and returns the descriptors that came
// with it, close-on-exec, in the order they were sent. On error none is
// left open. A message longer than MaxMessage is an error once that much
// of it has come, and what was read of it is dropped.
func (c *Conn) Receive(v any) ([]*os.File, error) {
	var files []*os.File
	fail := func(err error) ([]*os.File, error) {
		for _, f := range files {
			f.Close()
		}
		return nil, err
	}
	oob := make([]byte, unix.CmsgSpace(maxFDs*4))
	chunk := make([]byte, 4096)
	// Each read's bytes are searched for the newline, not the whole
	// buffer again: a long message would cost a scan per read.
	i := bytes.IndexByte(c.buf, '\n')
	for i < 0 {
		if len(c.buf) > MaxMessage {
			c.buf = nil
			return fail(errMessageTooLong)
		}
		n, oobn, _, _, err := c.uc.ReadMsgUnix(chunk, oob)
		n, oobn = max(n, 0), max(oobn, 0) // -1 with an error
		if oobn > 0 {
			got, perr := parseRights(oob[:oobn])
			files = append(files, got...)
			if perr != nil {
				return fail(perr)
			}
		}
		c.buf = append(c.buf, chunk[:n]...)
		if err != nil {
			if errors.Is(err, io.EOF) && len(c.buf) > 0 {
				err = io.ErrUnexpectedEOF
			}
			return fail(err)
		}
		if n == 0 {
			return fail(io.EOF)
		}
		if j := bytes.IndexByte(chunk[:n], '\n'); j >= 0 {
			i = len(c.buf) - n + j
		}
	}
	if i > MaxMessage {
		c.buf = nil
		return fail(errMessageTooLong)
	}
	line := c.buf[:i]
	c.buf = append([]byte(nil), c.buf[i+1:]...)
	if err := json.Unmarshal(line, v); err != nil {
		return fail(fmt.Errorf("bad control message: %w", err))
	}
	return files, nil
}

func parseRights(oob []byte) ([]*os.File, error) {
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return nil, err
	}
	var files []*os.File
	for _, m := range msgs {
		fds, err := unix.ParseUnixRights(&m)
		if err != nil {
			continue
		}
		for _, fd := range fds {
			unix.CloseOnExec(fd)
			files = append(files, os.NewFile(uintptr(fd), "passed"))
		}
	}
	return files, nil
}

// FileConn makes a Conn of an inherited connection's descriptor, which
// it takes over, and of the bytes its previous owner had read past the
// last message (Handover).
func FileConn(f *os.File, pending []byte) (*Conn, error) {
	c, err := net.FileConn(f)
	f.Close()
	if err != nil {
		return nil, err
	}
	uc, ok := c.(*net.UnixConn)
	if !ok {
		c.Close()
		return nil, errors.New("not a unix socket")
	}
	return &Conn{uc: uc, buf: pending}, nil
}
