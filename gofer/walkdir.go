package gofer

import (
	"bytes"
	"encoding/binary"

	"golang.org/x/sys/unix"
)

// walkDir walks every entry of directory id at once, as many walks would:
// a node and attributes for each, so that a client looking up many names
// in one directory (git status, a dynamic loader's probes, an import path
// scan) pays one round trip, and knows which names are not there. The
// answer is complete only if every entry fits in it and the directory has
// at most maxWalkDir entries; an entry removed meanwhile is left out.
func (s *session) walkDir(id NodeID) error {
	dir, err := s.lookup(id)
	if err != nil {
		return err
	}
	if dir.mode&unix.S_IFMT != unix.S_IFDIR {
		return unix.ENOTDIR
	}
	names, complete, err := s.listNames(dir)
	if err != nil {
		return err
	}
	head := len(s.out)
	s.out = append(s.out, 0) // complete, filled in below
	const entryMax = 8 + attrSize + 2 + maxName
	for _, name := range names {
		if len(s.out)+entryMax > maxMessage || s.held >= s.limit {
			complete = false
			break
		}
		fd, err := walkAt(dir.fd, name)
		if err != nil {
			continue // gone meanwhile, or not walkable: a single walk says why
		}
		var st unix.Stat_t
		if err := unix.Fstatat(fd, "", &st, unix.AT_EMPTY_PATH|unix.AT_SYMLINK_NOFOLLOW); err != nil {
			unix.Close(fd)
			continue
		}
		child := s.add(dir, name, fd, &st)
		a := attrOf(&st)
		s.out = le.AppendUint64(s.out, uint64(child))
		s.out = appendAttr(s.out, &a)
		s.out = le.AppendUint16(s.out, uint16(len(name)))
		s.out = append(s.out, name...)
	}
	if complete {
		s.out[head] = 1
	}
	return nil
}

// listNames lists directory dir's entries but "." and "..", at most
// maxWalkDir of them (complete is false if there are more).
func (s *session) listNames(dir *node) (names []string, complete bool, err error) {
	fd, err := reopen(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NONBLOCK)
	if err != nil {
		return nil, false, err
	}
	defer unix.Close(fd)
	for {
		size, err := unix.Getdents(fd, s.scratch)
		if err != nil {
			return nil, false, err
		}
		if size == 0 {
			return names, true, nil
		}
		for buf := s.scratch[:size]; len(buf) >= direntHeader; {
			reclen := int(binary.NativeEndian.Uint16(buf[16:]))
			if reclen < direntHeader || reclen > len(buf) {
				return nil, false, unix.EIO
			}
			name := buf[direntHeader:reclen]
			if i := bytes.IndexByte(name, 0); i >= 0 {
				name = name[:i]
			}
			buf = buf[reclen:]
			if string(name) == "." || string(name) == ".." {
				continue
			}
			if len(names) == maxWalkDir {
				return nil, false, nil
			}
			names = append(names, string(name))
		}
	}
}
