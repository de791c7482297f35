package gofer

import (
	"errors"
	"fmt"
	"math"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// ErrBroken is wrapped by every Client error that comes from the connection
// rather than from the host file system: the gofer went away, or said
// something that is not a valid answer. Such errors are never a unix.Errno,
// not even through errors.As, so the sentry cannot mistake one for an
// errno to hand to the guest; it should treat them as EIO. Once broken, a
// Client stays broken: every later call returns the same error.
//
// Every other Client error is a unix.Errno, exactly as the host gave it.
var ErrBroken = errors.New("gofer: connection broken")

// Client is the sentry's end of a gofer connection. It is safe for
// concurrent use by many goroutines.
//
// Calls are serialised: one request is outstanding at a time, and a call
// waits for the ones before it. That keeps the protocol free of tags and
// reordering, and is enough while the sentry caches what it walks;
// pipelining is a later step if the gofer becomes a bottleneck.
type Client struct {
	fd     int
	closed atomic.Bool

	mu      sync.Mutex
	err     error // sticky: set when the connection broke or was closed
	greeted bool
	in      []byte // the answer being read; valid while mu is held
	oob     []byte
}

// NewClient makes a Client on fd, its end of a SOCK_SEQPACKET socket to a
// gofer. The Client owns fd from now on. The handshake happens on the first
// call, so NewClient itself cannot fail.
func NewClient(fd int) *Client {
	return &Client{
		fd:  fd,
		in:  make([]byte, maxMessage),
		oob: make([]byte, unix.CmsgSpace(4)), // room for exactly one fd
	}
}

// Stat returns the attributes of n (a symlink describes itself).
func (c *Client) Stat(n NodeID) (Attr, error) {
	var a Attr
	_, err := c.call(request(opStat, n), false, func(d *decoder) { a = d.attr() })
	return a, err
}

// Walk looks up one component, name, in directory dir and returns a new
// node for it, to be released once. It never follows a symlink: a link
// comes back as a node of type S_IFLNK.
func (c *Client) Walk(dir NodeID, name string) (NodeID, Attr, error) {
	if len(name) > maxName {
		return 0, Attr{}, unix.ENAMETOOLONG // and the request stays small
	}
	var (
		id NodeID
		a  Attr
	)
	req := append(request(opWalk, dir), name...)
	_, err := c.call(req, false, func(d *decoder) {
		id = NodeID(d.u64())
		a = d.attr()
	})
	return id, a, err
}

// Open opens n for I/O and returns a new host fd, close-on-exec. flags is
// O_RDONLY, O_WRONLY or O_RDWR, plus any of O_APPEND, O_TRUNC, O_DIRECTORY
// and O_NONBLOCK; anything else is EINVAL. Only regular files and
// directories open: a symlink gives ELOOP, a device, FIFO or socket EACCES.
func (c *Client) Open(n NodeID, flags int) (int, error) {
	if flags < 0 || int64(flags) > math.MaxUint32 {
		return -1, unix.EINVAL
	}
	return c.call(le.AppendUint32(request(opOpen, n), uint32(flags)), true, nil)
}

// ReadDir returns every entry of directory n except "." and "..", in the
// order the host gave them. Large directories take several round trips, one
// page each, assembled here.
func (c *Client) ReadDir(n NodeID) ([]Dirent, error) {
	var (
		all    []Dirent
		cookie uint64
	)
	for {
		var (
			next uint64
			eof  bool
		)
		req := le.AppendUint64(request(opReadDir, n), cookie)
		_, err := c.call(req, false, func(d *decoder) {
			next = d.u64()
			eof = d.u8() != 0
			for !d.bad && !d.empty() {
				all = append(all, d.dirent())
			}
		})
		if err != nil {
			return nil, err
		}
		if eof {
			return all, nil
		}
		if next == cookie {
			// A page that does not move on would repeat forever.
			return nil, unix.EIO
		}
		cookie = next
	}
}

// ReadLink returns the target of symlink n. On anything but a symlink it
// gives EINVAL, as readlink(2) does.
func (c *Client) ReadLink(n NodeID) (string, error) {
	var target string
	_, err := c.call(request(opReadLink, n), false, func(d *decoder) { target = string(d.rest()) })
	return target, err
}

// Release tells the gofer to close nodes. Releasing the root, or a node
// not held, does nothing. There is nothing useful to do about a failure,
// so none is reported; a broken connection shows up on the next call.
func (c *Client) Release(ns ...NodeID) {
	for len(ns) > 0 {
		batch := ns[:min(len(ns), maxRelease)]
		ns = ns[len(batch):]
		req := make([]byte, 1, 1+8*len(batch))
		req[0] = opRelease
		for _, n := range batch {
			req = le.AppendUint64(req, uint64(n))
		}
		c.call(req, false, nil)
	}
}

// Close ends the connection; the gofer then closes everything it held for
// this client. A call waiting for an answer returns ErrBroken.
func (c *Client) Close() error {
	if c.closed.Swap(true) {
		return fmt.Errorf("%w: client already closed", ErrBroken)
	}
	// Shutdown first, without the lock, to wake a call blocked in recvmsg;
	// the fd itself is closed only once no call can be using it.
	unix.Shutdown(c.fd, unix.SHUT_RDWR)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err == nil {
		c.err = fmt.Errorf("%w: client closed", ErrBroken)
	}
	return unix.Close(c.fd)
}

func request(op uint8, n NodeID) []byte {
	return le.AppendUint64(append(make([]byte, 0, 32), op), uint64(n))
}

// call sends req and waits for the answer. On success decode, if not nil,
// reads the results while c.mu is still held (they live in c.in); call
// then checks that they were exactly well-formed. wantFD says whether the
// answer carries a donated fd, which call returns.
func (c *Client) call(req []byte, wantFD bool, decode func(*decoder)) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		return -1, c.err
	}
	if !c.greeted {
		if err := c.handshake(); err != nil {
			return -1, err
		}
	}
	return c.roundTrip(req, wantFD, decode)
}

func (c *Client) handshake() error {
	var version uint32
	req := le.AppendUint32([]byte{opHello}, protocolVersion)
	_, err := c.roundTrip(req, false, func(d *decoder) { version = d.u32() })
	if c.err != nil {
		return c.err // the connection broke, which already says so
	}
	if err == nil && version != protocolVersion {
		err = fmt.Errorf("gofer speaks version %d", version)
	}
	if err != nil {
		return c.broke("handshake for protocol version %d: %v", protocolVersion, err)
	}
	c.greeted = true
	return nil
}

func (c *Client) roundTrip(req []byte, wantFD bool, decode func(*decoder)) (int, error) {
	if err := sendMsg(c.fd, req, -1); err != nil {
		return -1, c.broke("send: %v", err)
	}
	n, oobn, flags, err := recvMsg(c.fd, c.in, c.oob, unix.MSG_CMSG_CLOEXEC)
	if err != nil {
		return -1, c.broke("receive: %v", err)
	}
	fds, err := donated(c.oob[:oobn])
	if err != nil {
		return -1, c.broke("control message: %v", err)
	}
	fd := -1
	if len(fds) == 1 && wantFD {
		fd, fds = fds[0], nil
	}
	for _, extra := range fds {
		unix.Close(extra)
	}
	switch {
	case n == 0:
		return -1, c.broke("gofer closed the connection")
	case flags&(unix.MSG_TRUNC|unix.MSG_CTRUNC) != 0:
		return -1, c.broke("oversized answer")
	}
	d := decoder{b: c.in[:n]}
	if errno := d.u32(); errno != 0 {
		if fd >= 0 {
			unix.Close(fd)
		}
		return -1, unix.Errno(errno)
	}
	if decode != nil {
		decode(&d)
	}
	if !d.ok() || wantFD != (fd >= 0) {
		if fd >= 0 {
			unix.Close(fd)
		}
		return -1, c.broke("malformed answer")
	}
	return fd, nil
}

// broke marks the connection broken. The cause is formatted with %v, not
// wrapped, so that a host errno from sendmsg or recvmsg stays out of
// errors.As's reach.
func (c *Client) broke(format string, args ...any) error {
	c.err = fmt.Errorf("%w: "+format, append([]any{ErrBroken}, args...)...)
	return c.err
}

// donated returns the fds in SCM_RIGHTS control messages.
func donated(oob []byte) ([]int, error) {
	if len(oob) == 0 {
		return nil, nil
	}
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return nil, err
	}
	var fds []int
	for i := range msgs {
		rights, err := unix.ParseUnixRights(&msgs[i])
		if err != nil {
			return nil, err
		}
		fds = append(fds, rights...)
	}
	return fds, nil
}

// WalkEntry is one entry of WalkDir's answer: a node for it, to be released
// once, and its attributes.
type WalkEntry struct {
	Name string
	Node NodeID
	Attr Attr
}

// WalkDir walks every entry of directory dir at once. complete says the
// entries are all the directory has (so a name not among them is not
// there); a directory too large for one answer gives complete false, with
// what fitted or nothing.
func (c *Client) WalkDir(dir NodeID) (entries []WalkEntry, complete bool, err error) {
	_, err = c.call(request(opWalkDir, dir), false, func(d *decoder) {
		complete = d.u8() == 1
		for !d.bad && !d.empty() {
			var e WalkEntry
			e.Node = NodeID(d.u64())
			e.Attr = d.attr()
			e.Name = d.name16()
			entries = append(entries, e)
		}
	})
	if err != nil {
		return nil, false, err
	}
	return entries, complete, nil
}
