package boot

import (
	"io"
	"path"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/internal/control"
	"github.com/moat-sandbox/moat/sentry/vfs"
)

// regular checks that p is a regular file to read or write: a directory
// is EISDIR; a device, FIFO or socket is refused (EINVAL), since only a
// task opens those, and their data need not end.
func regular(p vfs.Path) (vfs.Stat, error) {
	st, err := p.Dentry.Inode().Stat()
	if err != nil {
		return st, err
	}
	switch st.Type() {
	case unix.S_IFREG:
		return st, nil
	case unix.S_IFDIR:
		return st, unix.EISDIR
	}
	return st, unix.EINVAL
}

// openRead opens name (a final symlink followed) for reading, as open(2)
// with O_RDONLY would for the user, and returns its entry too.
func (a *fileActor) openRead(name string) (*vfs.File, control.FileEntry, error) {
	p, err := a.lookup(name, true)
	if err != nil {
		return nil, control.FileEntry{}, err
	}
	st, err := regular(p)
	if err != nil {
		return nil, control.FileEntry{}, err
	}
	if err := a.creds.Permission(&st, vfs.MayRead); err != nil {
		return nil, control.FileEntry{}, err
	}
	e, err := entry(p, path.Clean(name))
	if err != nil {
		return nil, control.FileEntry{}, err
	}
	impl, err := p.Dentry.Inode().Open(unix.O_RDONLY)
	if err != nil {
		return nil, control.FileEntry{}, err
	}
	return vfs.NewFile(impl, p, unix.O_RDONLY), e, nil
}

// openWrite opens name for writing from its start, as a shell's
// `> name` does: an existing file (a final symlink followed) is
// truncated, if the user may write it; a missing one is made with mode,
// owned by the user, after the directories above it.
func (a *fileActor) openWrite(name string, mode uint32) (*vfs.File, error) {
	if err := a.mkdirAll(path.Dir(path.Clean(name))); err == unix.EEXIST {
		return nil, unix.ENOTDIR // a file where the directory would be, as open(2) finds it
	} else if err != nil {
		return nil, err
	}
	for {
		p, err := a.lookup(name, true)
		if err == unix.ENOENT {
			if _, lerr := a.lookup(name, false); lerr == nil {
				return nil, unix.ENOENT // a dangling symlink: not made through
			}
			t, err := a.target(name)
			if err != nil {
				return nil, err
			}
			p, err = vfs.Create(a.creds, t, mode&0o7777)
			if err == unix.EEXIST {
				continue // made meanwhile: open that
			}
			if err != nil {
				return nil, err
			}
			impl, err := p.Dentry.Inode().Open(unix.O_WRONLY)
			if err != nil {
				return nil, err
			}
			return vfs.NewFile(impl, p, unix.O_WRONLY), nil
		}
		if err != nil {
			return nil, err
		}
		st, err := regular(p)
		if err != nil {
			return nil, err
		}
		if p.Mount.Flags&unix.MS_RDONLY != 0 {
			return nil, unix.EROFS
		}
		if err := a.creds.Permission(&st, vfs.MayWrite); err != nil {
			return nil, err
		}
		impl, err := p.Dentry.Inode().Open(unix.O_WRONLY | unix.O_TRUNC)
		if err != nil {
			return nil, err
		}
		f := vfs.NewFile(impl, p, unix.O_WRONLY)
		f.NotifyTruncated()
		return f, nil
	}
}

// ioChunk is how much of a file one read or write moves.
const ioChunk = 64 << 10

// copyOut writes what f holds from its offset on to w.
func copyOut(w io.Writer, f *vfs.File) error {
	buf := make([]byte, ioChunk)
	for {
		n, err := f.Read(vfs.NewIOSeqBuffer(buf))
		if n > 0 {
			if _, werr := w.Write(buf[:n]); werr != nil {
				return werr
			}
		}
		if err != nil {
			return err
		}
		if n == 0 {
			return nil
		}
	}
}

// copyIn writes what r gives, to its end, into f.
func copyIn(f *vfs.File, r io.Reader) error {
	buf := make([]byte, ioChunk)
	for {
		n, rerr := r.Read(buf)
		for done := 0; done < n; {
			m, err := f.Write(vfs.NewIOSeqBuffer(buf[done:n]))
			if err != nil {
				return err
			}
			if m == 0 {
				return unix.EIO // a file that takes nothing would loop forever
			}
			done += m
		}
		if rerr == io.EOF {
			return nil
		}
		if rerr != nil {
			return rerr
		}
	}
}
