package gofer

import (
	"errors"
	"fmt"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// Serve answers requests on fd, a SOCK_SEQPACKET socket, for the tree at
// rootPath (a directory, or a single file), until the peer closes its end (or sends an empty message, which
// a seqpacket socket cannot tell apart from that). With readonly, every
// open for writing answers EROFS.
//
// rootPath comes from the trusted OCI bundle and is opened as given; from
// then on every lookup is confined beneath it. Serve closes every host fd it
// opened before it returns, but not fd, which stays the caller's.
func Serve(fd int, rootPath string, readonly bool) error {
	s, err := newSession(rootPath, readonly)
	if err != nil {
		return err
	}
	defer s.closeAll()
	return s.serve(fd)
}

// session is one client's view of the tree: its node table and buffers.
// Requests are handled one at a time, on one goroutine.
type session struct {
	readonly bool
	greeted  bool
	nodes    map[NodeID]*node
	byName   map[nameKey][]*node // the nodes walked to each name, for renames and removals
	last     NodeID              // the most recent ID handed out
	held     int                 // host fds open for this client, parents kept for children included
	limit    int                 // most fds held at once
	out      []byte              // the answer being built
	scratch  []byte              // getdents64 and readlinkat results
}

func newSession(rootPath string, readonly bool) (*session, error) {
	fd, err := unix.Open(rootPath, unix.O_PATH|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("gofer: open root %q: %w", rootPath, err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("gofer: stat root %q: %w", rootPath, err)
	}
	root := &node{fd: fd, name: ".", dev: st.Dev, ino: st.Ino, mode: st.Mode, refs: 1}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		// A single file (a bind mount of one): it is reopened by its
		// host path, resolved once, now.
		if root.path, err = filepath.EvalSymlinks(rootPath); err != nil {
			unix.Close(fd)
			return nil, fmt.Errorf("gofer: resolve root %q: %w", rootPath, err)
		}
	}
	return &session{
		readonly: readonly,
		nodes:    map[NodeID]*node{RootNode: root},
		byName:   make(map[nameKey][]*node),
		last:     RootNode,
		held:     1,
		limit:    maxHeld,
		out:      make([]byte, 0, maxMessage),
		scratch:  make([]byte, maxMessage),
	}, nil
}

func (s *session) serve(sock int) error {
	typ, err := unix.GetsockoptInt(sock, unix.SOL_SOCKET, unix.SO_TYPE)
	if err != nil {
		return fmt.Errorf("gofer: socket type: %w", err)
	}
	if typ != unix.SOCK_SEQPACKET {
		return fmt.Errorf("gofer: socket type %d, want SOCK_SEQPACKET", typ)
	}
	in := make([]byte, maxMessage)
	for {
		n, _, flags, err := recvMsg(sock, in, nil, 0)
		if err != nil {
			return fmt.Errorf("gofer: receive: %w", err)
		}
		if n == 0 {
			return nil
		}
		var answer []byte
		fd := -1
		if flags&unix.MSG_TRUNC != 0 {
			answer = s.fail(unix.EPROTO) // too long to be any request
		} else {
			answer, fd = s.handle(in[:n])
		}
		err = sendMsg(sock, answer, fd)
		if fd >= 0 {
			unix.Close(fd) // the peer has its own copy now
		}
		switch {
		case err == unix.EPIPE || err == unix.ECONNRESET:
			return nil
		case err != nil:
			return fmt.Errorf("gofer: send: %w", err)
		}
	}
}

// handle answers one request. The answer is valid until the next call;
// fd, if not -1, is to be donated with it and then closed. Whatever req
// holds, handle answers: a malformed request gets EPROTO.
func (s *session) handle(req []byte) (answer []byte, fd int) {
	d := decoder{b: req}
	op := d.u8()
	if !s.greeted && op != opHello {
		return s.fail(unix.EPROTO), -1
	}
	s.out = append(s.out[:0], 0, 0, 0, 0) // errno 0; results follow
	fd = -1
	var err error
	switch op {
	case opHello:
		v := d.u32()
		err = d.check()
		if err == nil {
			err = s.hello(v)
		}
	case opStat:
		id := NodeID(d.u64())
		err = d.check()
		if err == nil {
			err = s.stat(id)
		}
	case opWalk:
		id := NodeID(d.u64())
		name := d.rest()
		err = d.check()
		if err == nil {
			err = s.walk(id, string(name))
		}
	case opOpen:
		id := NodeID(d.u64())
		flags := int(d.u32())
		err = d.check()
		if err == nil {
			fd, err = s.open(id, flags)
		}
	case opReadDir:
		id := NodeID(d.u64())
		cookie := d.u64()
		err = d.check()
		if err == nil {
			err = s.readDir(id, cookie)
		}
	case opReadLink:
		id := NodeID(d.u64())
		err = d.check()
		if err == nil {
			err = s.readLink(id)
		}
	case opCreate, opMkdir, opMknod:
		dir := NodeID(d.u64())
		mode, uid, gid := d.u32(), d.u32(), d.u32()
		name := string(d.rest())
		if err = d.check(); err != nil {
			break
		}
		switch op {
		case opCreate:
			fd, err = s.create(dir, mode, uid, gid, name)
		case opMkdir:
			err = s.mkdir(dir, mode, uid, gid, name)
		default:
			err = s.mknod(dir, mode, uid, gid, name)
		}
	case opTmpfile:
		dir := NodeID(d.u64())
		mode, uid, gid := d.u32(), d.u32(), d.u32()
		if err = d.check(); err == nil {
			fd, err = s.tmpfile(dir, mode, uid, gid)
		}
	case opSymlink:
		dir := NodeID(d.u64())
		uid, gid := d.u32(), d.u32()
		name := d.name16()
		target := string(d.rest())
		if err = d.check(); err == nil {
			err = s.symlink(dir, uid, gid, name, target)
		}
	case opLink:
		dir, target := NodeID(d.u64()), NodeID(d.u64())
		name := string(d.rest())
		if err = d.check(); err == nil {
			err = s.link(dir, target, name)
		}
	case opUnlink:
		dir := NodeID(d.u64())
		flags := int(d.u32())
		name := string(d.rest())
		if err = d.check(); err == nil {
			err = s.unlink(dir, flags, name)
		}
	case opRename:
		oldDir, newDir := NodeID(d.u64()), NodeID(d.u64())
		flags := d.u32()
		oldName := d.name16()
		newName := string(d.rest())
		if err = d.check(); err == nil {
			err = s.rename(oldDir, newDir, flags, oldName, newName)
		}
	case opSetAttr:
		id := NodeID(d.u64())
		a := d.setAttr()
		if err = d.check(); err == nil {
			err = s.setAttr(id, a)
		}
	case opStatFS:
		id := NodeID(d.u64())
		if err = d.check(); err == nil {
			err = s.statFS(id)
		}
	case opGetXattr, opRemoveXattr:
		id := NodeID(d.u64())
		name := string(d.rest())
		if err = d.check(); err == nil {
			if op == opGetXattr {
				err = s.getXattr(id, name)
			} else {
				err = s.removeXattr(id, name)
			}
		}
	case opSetXattr:
		id := NodeID(d.u64())
		flags := int(d.u32())
		name := d.name16()
		value := d.rest()
		if err = d.check(); err == nil {
			err = s.setXattr(id, flags, name, value)
		}
	case opWalkDir:
		id := NodeID(d.u64())
		if err = d.check(); err == nil {
			err = s.walkDir(id)
		}
	case opListXattr:
		id := NodeID(d.u64())
		if err = d.check(); err == nil {
			err = s.listXattr(id)
		}
	case opRelease:
		if d.empty() || len(d.b)%8 != 0 {
			err = unix.EPROTO
			break
		}
		for !d.empty() {
			s.release(NodeID(d.u64()))
		}
	default:
		err = unix.EPROTO
	}
	if err != nil {
		if fd >= 0 {
			unix.Close(fd)
		}
		return s.fail(err), -1
	}
	return s.out, fd
}

// check turns a malformed request into EPROTO.
func (d *decoder) check() error {
	if !d.ok() {
		return unix.EPROTO
	}
	return nil
}

// fail makes the answer for err: its errno as the host gave it, or EIO for
// the impossible error that is not one.
func (s *session) fail(err error) []byte {
	var errno unix.Errno
	if !errors.As(err, &errno) || errno == 0 {
		errno = unix.EIO
	}
	s.out = le.AppendUint32(s.out[:0], uint32(errno))
	return s.out
}

func (s *session) hello(version uint32) error {
	if version != protocolVersion {
		return unix.EPROTO
	}
	s.greeted = true
	s.out = le.AppendUint32(s.out, protocolVersion)
	return nil
}

func (s *session) stat(id NodeID) error {
	n, err := s.lookup(id)
	if err != nil {
		return err
	}
	var st unix.Stat_t
	if err := unix.Fstatat(n.fd, "", &st, unix.AT_EMPTY_PATH|unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return err
	}
	a := attrOf(&st)
	s.out = appendAttr(s.out, &a)
	return nil
}

func (s *session) walk(id NodeID, name string) error {
	if err := checkName(name); err != nil {
		return err
	}
	dir, err := s.lookup(id)
	if err != nil {
		return err
	}
	if s.held >= s.limit {
		return unix.ENFILE
	}
	fd, err := walkAt(dir.fd, name)
	if err != nil {
		return err
	}
	var st unix.Stat_t
	if err := unix.Fstatat(fd, "", &st, unix.AT_EMPTY_PATH|unix.AT_SYMLINK_NOFOLLOW); err != nil {
		unix.Close(fd)
		return err
	}
	child := s.add(dir, name, fd, &st)
	a := attrOf(&st)
	s.out = le.AppendUint64(s.out, uint64(child))
	s.out = appendAttr(s.out, &a)
	return nil
}

func (s *session) open(id NodeID, flags int) (int, error) {
	n, err := s.lookup(id)
	if err != nil {
		return -1, err
	}
	if err := checkOpen(n, flags, s.readonly); err != nil {
		return -1, err
	}
	fd, err := reopen(n, flags&^unix.O_TRUNC)
	if err != nil {
		return -1, err
	}
	if flags&unix.O_TRUNC != 0 {
		if err := truncate(n, fd, flags); err != nil {
			unix.Close(fd)
			return -1, err
		}
	}
	return fd, nil
}

func (s *session) readLink(id NodeID) error {
	n, err := s.lookup(id)
	if err != nil {
		return err
	}
	if n.mode&unix.S_IFMT != unix.S_IFLNK {
		return unix.EINVAL // what readlink(2) says of a file that is not a link
	}
	buf := s.scratch[:unix.PathMax]
	size, err := unix.Readlinkat(n.fd, "", buf)
	if err != nil {
		return err
	}
	if size == len(buf) {
		return unix.ENAMETOOLONG // cannot happen: targets are under PATH_MAX
	}
	s.out = append(s.out, buf[:size]...)
	return nil
}
