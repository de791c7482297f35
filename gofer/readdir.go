package gofer

import (
	"bytes"
	"encoding/binary"

	"golang.org/x/sys/unix"
)

// A linux_dirent64 record: d_ino u64, d_off s64, d_reclen u16, d_type u8,
// then the NUL-terminated name, padded to 8 bytes. Host byte order.
const (
	direntHeader = 19
	// direntMax is the largest record for a NAME_MAX name; getdents64
	// refuses (EINVAL) a buffer too small for the next record.
	direntMax = (direntHeader + maxName + 1 + 7) &^ 7
)

// readDir answers one page of directory id, starting at cookie (0 for the
// start, else the cookie a previous page ended with).
//
// Pages are stateless: each one re-opens the directory through reopen and
// seeks to the cookie, which is the d_off getdents64 gave the last entry
// read, the position the file system itself hands out for resuming. The
// gofer keeps no directory stream between pages, so a client cannot make
// it hold one open.
//
// An entry's encoding is always shorter than its getdents64 record, so
// asking getdents64 for no more than the room left in the answer keeps the
// page within maxMessage.
func (s *session) readDir(id NodeID, cookie uint64) error {
	n, err := s.lookup(id)
	if err != nil {
		return err
	}
	if n.mode&unix.S_IFMT != unix.S_IFDIR {
		return unix.ENOTDIR
	}
	// O_NONBLOCK changes nothing for getdents64, and asking for it spares
	// reopen the fcntl that would clear it.
	fd, err := reopen(n, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NONBLOCK)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	if cookie != 0 {
		if _, err := unix.Seek(fd, int64(cookie), unix.SEEK_SET); err != nil {
			return err
		}
	}
	head := len(s.out)
	s.out = append(s.out, make([]byte, 9)...) // next cookie u64, eof u8: filled in below
	next, eof := cookie, false
	for room := maxMessage - len(s.out); room >= direntMax; room = maxMessage - len(s.out) {
		size, err := unix.Getdents(fd, s.scratch[:room])
		if err == unix.EINVAL && len(s.out) > head+9 {
			break // a record longer than NAME_MAX allows: it starts the next page
		}
		if err != nil {
			return err
		}
		if size == 0 {
			eof = true
			break
		}
		if next, err = s.appendDirents(s.scratch[:size]); err != nil {
			return err
		}
	}
	le.PutUint64(s.out[head:], next)
	if eof {
		s.out[head+8] = 1
	}
	return nil
}

// appendDirents encodes the getdents64 records in buf, all but "." and "..",
// and returns the d_off of the last one.
func (s *session) appendDirents(buf []byte) (last uint64, err error) {
	for len(buf) > 0 {
		if len(buf) < direntHeader {
			return 0, unix.EIO
		}
		reclen := int(binary.NativeEndian.Uint16(buf[16:]))
		if reclen < direntHeader || reclen > len(buf) {
			return 0, unix.EIO
		}
		rec := buf[:reclen]
		buf = buf[reclen:]
		name := rec[direntHeader:]
		if i := bytes.IndexByte(name, 0); i >= 0 {
			name = name[:i]
		}
		last = binary.NativeEndian.Uint64(rec[8:])
		if string(name) == "." || string(name) == ".." {
			continue
		}
		s.out = appendDirent(s.out, binary.NativeEndian.Uint64(rec), rec[18], name)
	}
	return last, nil
}
