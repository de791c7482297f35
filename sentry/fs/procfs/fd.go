package procfs

import (
	"fmt"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/sentry/kernel"
	"github.com/moat-sandbox/moat/sentry/vfs"
)

// fdDir is /proc/<pid>/fd: a symlink per open fd, to what the fd names.
func (f *fs) fdDir(path string, get func() (*kernel.Task, error)) *node {
	return f.dir(path, true, func() []child {
		t, err := get()
		if err != nil {
			return nil
		}
		var out []child
		for _, e := range t.FDs().Snapshot() {
			file := e.File
			name := strconv.Itoa(int(e.FD))
			n := f.link(path+"/"+name, func(vfs.Caller) (string, error) {
				if n, ok := file.Impl().(interface{ Name() string }); ok && file.Path().Dentry == nil {
					return n.Name(), nil
				}
				return pathName(t, file.Path()), nil
			})
			n.jump = func() (vfs.Path, error) { return vfs.FilePath(file) }
			// The link's permission bits are the fd's access mode, as
			// Linux's proc_fd_link gives them: r-x to read, -wx to write.
			n.mode = unix.S_IFLNK
			if file.Readable() {
				n.mode |= 0o500
			}
			if file.Writable() {
				n.mode |= 0o300
			}
			out = append(out, child{name, f.owned(n, get)})
		}
		return out
	})
}

// fdInfoDir is /proc/<pid>/fdinfo: a file per open fd, as Linux's
// seq_show prints it: the offset, the flags in octal (O_CLOEXEC for a
// close-on-exec fd), the mount id and inode number, then what the file's
// kind adds (FDInfoer).
func (f *fs) fdInfoDir(path string, get func() (*kernel.Task, error)) *node {
	return f.dir(path, true, func() []child {
		t, err := get()
		if err != nil {
			return nil
		}
		var out []child
		for _, e := range t.FDs().Snapshot() {
			fd := e.FD
			name := strconv.Itoa(int(fd))
			n := f.file(path+"/"+name, func() ([]byte, error) {
				for _, e := range t.FDs().Snapshot() {
					if e.FD == fd {
						return f.fdInfo(e), nil
					}
				}
				return nil, unix.ENOENT
			})
			n.mode = unix.S_IFREG | 0o400
			n.noWrite = unix.EINVAL
			out = append(out, child{name, f.owned(n, get)})
		}
		return out
	})
}

// FDInfoer is implemented by files whose kind adds lines to fdinfo
// (eventfd's count, epoll's interest list, signalfd's mask), in Linux's
// format, each ending in a newline.
type FDInfoer interface {
	FDInfo() string
}

// PIDFDInfoer is implemented by files whose fdinfo lines name a process
// by the pids this /proc's namespace gives it (a pidfd's).
type PIDFDInfoer interface {
	FDInfoIn(ns *kernel.PIDNamespace) string
}

func (f *fs) fdInfo(e kernel.FDInfo) []byte {
	file := e.File
	flags := file.Flags()
	if e.CloseOnExec {
		flags |= unix.O_CLOEXEC
	}
	mnt := vfs.AnonMountID()
	if m := file.Path().Mount; m != nil {
		mnt = m.ID()
	}
	var ino uint64
	if st, err := file.Stat(); err == nil {
		ino = st.Ino
	}
	var b strings.Builder
	fmt.Fprintf(&b, "pos:\t%d\nflags:\t0%o\nmnt_id:\t%d\nino:\t%d\n", file.Offset(), flags, mnt, ino)
	switch x := file.Impl().(type) {
	case PIDFDInfoer:
		b.WriteString(x.FDInfoIn(f.ns))
	case FDInfoer:
		b.WriteString(x.FDInfo())
	}
	return []byte(b.String())
}

// mapFilesDir is /proc/<pid>/map_files: a symlink per mapping of a file,
// named by its address range as Linux prints it ("%lx-%lx", so a name
// with a leading zero or a space is not there), to the file's path.
func (f *fs) mapFilesDir(path string, get func() (*kernel.Task, error)) *node {
	return f.dir(path, true, func() []child {
		t, err := get()
		if err != nil {
			return nil
		}
		var out []child
		for _, m := range t.MM().Maps() {
			if !strings.HasPrefix(m.Name, "/") {
				continue
			}
			target := m.Name
			name := fmt.Sprintf("%x-%x", m.Start, m.End)
			n := f.link(path+"/"+name, func(vfs.Caller) (string, error) { return target, nil })
			n.mode = unix.S_IFLNK | 0o400
			out = append(out, child{name, f.owned(n, get)})
		}
		return out
	})
}
