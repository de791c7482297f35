package boot

import (
	"errors"
	"fmt"
	"math"
	"path"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/internal/control"
	"github.com/moat-sandbox/moat/sentry/vfs"
)

// fileActor does the control socket's file operations (control.OpStat
// and the rest) on the sandbox's tree as one guest user: every check is
// the kernel's (vfs), against that user's credentials, so a file only
// root may read stays root's, and what is made is owned by the user.
type fileActor struct {
	root  vfs.Path
	creds *vfs.Creds
	// listRoom is how many bytes of entries (control.EntrySize) a
	// listing may come to: control.MaxEntriesSize, less in tests.
	listRoom int
}

func newFileActor(root vfs.Path, u control.FileUser) (*fileActor, error) {
	caps, err := capMask("effective", u.Caps)
	if err != nil {
		return nil, fmt.Errorf("file operation's user: %w", err)
	}
	return &fileActor{root: root, creds: &vfs.Creds{FSUID: u.UID, FSGID: u.GID, Groups: u.Groups, Caps: caps},
		listRoom: control.MaxEntriesSize}, nil
}

// errListTooLarge is a listing whose entries would not fit one control
// answer. E2BIG, as listxattr(2) fails when the list is larger than the
// most it may return (not ERANGE: no larger buffer would do): the caller
// can only list less deep.
var errListTooLarge = fmt.Errorf("the entries pass the %d MiB one control answer may hold: %w",
	control.MaxMessage>>20, unix.E2BIG)

// minEntrySize is the least that the entry of a name adds to a listing,
// the name's own bytes not counted: its path is at least "/" and the
// name, its numbers at least 0.
var minEntrySize = control.EntrySize(control.FileEntry{Path: "/"})

// Modes of what the operations make, as mkdir -p and a shell's
// redirection make them under the usual umask (022).
const (
	newDirMode  = 0o755
	newFileMode = 0o644
)

// maxRemoveDepth bounds how deep remove goes: a tree the guest made
// deeper than any path names is refused rather than walked without end.
const maxRemoveDepth = vfs.PathMax / 2

// step resolves one component below the directory cur, as the user: the
// resolver checks search permission on each directory it looks a name up
// in (Linux's may_lookup), those a symlink leads through included.
func (a *fileActor) step(cur vfs.Path, comp string, follow bool) (vfs.Path, error) {
	return vfs.Resolver{Root: a.root, Start: cur, Creds: *a.creds}.Lookup(comp, follow)
}

// searchable checks that dir is a directory the user may search.
func (a *fileActor) searchable(dir vfs.Path) error {
	if !dir.Dentry.IsDir() {
		return unix.ENOTDIR
	}
	st, err := dir.Dentry.Inode().Stat()
	if err != nil {
		return err
	}
	return a.creds.Permission(&st, vfs.MayExec)
}

// components splits an absolute path into its names; a relative one is
// refused, since the operations have no working directory.
func components(name string) ([]string, error) {
	if !path.IsAbs(name) {
		return nil, unix.EINVAL
	}
	if len(name) >= vfs.PathMax {
		return nil, unix.ENAMETOOLONG
	}
	var comps []string
	for _, c := range strings.Split(name, "/") {
		if c != "" {
			comps = append(comps, c)
		}
	}
	return comps, nil
}

// lookup resolves name, following a final symlink if follow says so.
func (a *fileActor) lookup(name string, follow bool) (vfs.Path, error) {
	comps, err := components(name)
	if err != nil {
		return vfs.Path{}, err
	}
	cur := a.root
	for i, c := range comps {
		if cur, err = a.step(cur, c, follow || i < len(comps)-1); err != nil {
			return vfs.Path{}, err
		}
	}
	return cur, nil
}

// target is the directory that holds name and its last component: what
// a call creates, removes or renames.
func (a *fileActor) target(name string) (vfs.Target, error) {
	comps, err := components(name)
	if err != nil {
		return vfs.Target{}, err
	}
	if len(comps) == 0 {
		return vfs.Target{Dir: a.root, Name: "/"}, nil
	}
	last := comps[len(comps)-1]
	dir, err := a.lookup(path.Dir(path.Clean(name)), true)
	if err != nil {
		return vfs.Target{}, err
	}
	// The last name is looked up as a directory's entry: the parent
	// must be searchable for it as for any component.
	if err := a.searchable(dir); err != nil {
		return vfs.Target{}, err
	}
	return vfs.Target{Dir: dir, Name: last}, nil
}

// entry describes the file at p, which name names.
func entry(p vfs.Path, name string) (control.FileEntry, error) {
	ino := p.Dentry.Inode()
	st, err := ino.Stat()
	if err != nil {
		return control.FileEntry{}, err
	}
	e := control.FileEntry{Path: name, Mode: st.Mode, Size: st.Size, UID: st.UID, GID: st.GID,
		Mtime: st.Mtime.Nano()}
	if st.Type() == unix.S_IFLNK {
		if e.Target, err = vfs.Readlink(ino, nil); err != nil {
			return control.FileEntry{}, err
		}
	}
	return e, nil
}

// stat is the entry of name itself, a symlink not followed.
func (a *fileActor) stat(name string) (control.FileEntry, error) {
	p, err := a.lookup(name, false)
	if err != nil {
		return control.FileEntry{}, err
	}
	return entry(p, path.Clean(name))
}

// names lists the directory at p, which the user must be allowed to read
// and search, through an open file description, as getdents64 lists it.
// room bounds the bytes of the entries the names would make, at
// minEntrySize and its name each: a directory with more is
// errListTooLarge before more of it is read.
func (a *fileActor) names(p vfs.Path, room int) ([]string, error) {
	st, err := p.Dentry.Inode().Stat()
	if err != nil {
		return nil, err
	}
	if err := a.creds.Permission(&st, vfs.MayRead|vfs.MayExec); err != nil {
		return nil, err
	}
	impl, err := p.Dentry.Inode().Open(unix.O_RDONLY | unix.O_DIRECTORY)
	if err != nil {
		return nil, err
	}
	f := vfs.NewFile(impl, p, unix.O_RDONLY)
	defer f.DecRef()
	var names []string
	err = f.IterDirents(a.root, func(d vfs.Dirent, _ int64) bool {
		if d.Name == "." || d.Name == ".." {
			return true
		}
		if room -= minEntrySize + len(d.Name); room < 0 {
			return false
		}
		names = append(names, d.Name)
		return true
	})
	if err == nil && room < 0 {
		err = errListTooLarge
	}
	return names, err
}

// list is the entries below the directory name (a symlink to one is
// followed), depth levels down (at least 1), symlinks in it not
// followed, parents before their children. A directory below that the
// user may not read is listed without its entries, as find goes on
// past it. Entries past a.listRoom are errListTooLarge.
func (a *fileActor) list(name string, depth int) ([]control.FileEntry, error) {
	dir, err := a.lookup(name, true)
	if err != nil {
		return nil, err
	}
	if !dir.Dentry.IsDir() {
		return nil, unix.ENOTDIR
	}
	var out []control.FileEntry
	room := a.listRoom
	var walk func(dir vfs.Path, prefix string, level int) error
	walk = func(dir vfs.Path, prefix string, level int) error {
		names, err := a.names(dir, room)
		if err != nil {
			return err
		}
		// The names are held while the directories below are walked: the
		// least their entries will take is spent now, so that what every
		// level holds at once stays within the room.
		for _, n := range names {
			room -= minEntrySize + len(n)
		}
		for _, n := range names {
			child, err := a.step(dir, n, false)
			if err == unix.ENOENT {
				room += minEntrySize + len(n)
				continue // removed since the listing
			}
			if err != nil {
				return err
			}
			e, err := entry(child, path.Join(prefix, n))
			if err != nil {
				return err
			}
			if room -= control.EntrySize(e) - minEntrySize - len(n); room < 0 {
				return errListTooLarge
			}
			out = append(out, e)
			if level < depth && child.Dentry.IsDir() {
				if err := walk(child, e.Path, level+1); err != nil && !errors.Is(err, unix.EACCES) {
					return err
				}
			}
		}
		return nil
	}
	if err := walk(dir, path.Clean(name), 1); err != nil {
		return nil, err
	}
	return out, nil
}

// mkdirAll makes name and each missing directory above it, as mkdir -p:
// a name that is a directory already is no error. A name that is a
// dangling symlink is EEXIST, as mkdir(2) finds it and mkdir -p reports
// it, not made through.
func (a *fileActor) mkdirAll(name string) error {
	comps, err := components(name)
	if err != nil {
		return err
	}
	cur := a.root
	made := false // comps[i] was made, or found made, since its lookup
	for i := 0; i < len(comps); {
		next, err := a.step(cur, comps[i], true)
		if err == unix.ENOENT && !made {
			err = vfs.Mkdir(a.creds, vfs.Target{Dir: cur, Name: comps[i]}, newDirMode)
			if err == nil || err == unix.EEXIST {
				made = true
				continue // made, by this or a guest's mkdir: look it up
			}
		} else if err == unix.ENOENT {
			// Still missing once made: a symlink to nothing holds the
			// name (or a guest removed the directory meanwhile).
			return unix.EEXIST
		}
		if err != nil {
			return err
		}
		if !next.Dentry.IsDir() {
			if i == len(comps)-1 {
				return unix.EEXIST
			}
			return unix.ENOTDIR
		}
		cur = next
		i++
		made = false
	}
	return nil
}

// rename moves from to to, making the directories to needs, and
// replacing what to names (a directory only by a directory, an empty
// one), as rename(2) does: a move to another file system is EXDEV.
func (a *fileActor) rename(from, to string) error {
	src, err := a.target(from)
	if err != nil {
		return err
	}
	if err := a.mkdirAll(path.Dir(path.Clean(to))); err == unix.EEXIST {
		return unix.ENOTDIR // a file where the directory would be, as rename(2) finds it
	} else if err != nil {
		return err
	}
	dst, err := a.target(to)
	if err != nil {
		return err
	}
	return vfs.Rename(a.creds, src, dst, 0)
}

// remove removes name and, for a directory, everything in it, as rm -rf:
// a symlink is removed, never followed. The root is refused (EBUSY, as
// rmdir gets) before anything in it goes.
func (a *fileActor) remove(name string) error {
	t, err := a.target(name)
	if err != nil {
		return err
	}
	if t.Name == "/" {
		return unix.EBUSY
	}
	p, err := a.lookup(name, false)
	if err != nil {
		return err
	}
	if !p.Dentry.IsDir() {
		return vfs.Unlink(a.creds, t)
	}
	if err := a.empty(p, 1); err != nil {
		return err
	}
	return vfs.Rmdir(a.creds, t)
}

// empty removes what the directory dir holds.
func (a *fileActor) empty(dir vfs.Path, depth int) error {
	if depth > maxRemoveDepth {
		return unix.ENAMETOOLONG
	}
	names, err := a.names(dir, math.MaxInt) // rm -rf holds a directory's names, however many
	if err != nil {
		return err
	}
	for _, n := range names {
		t := vfs.Target{Dir: dir, Name: n}
		child, err := a.step(dir, n, false)
		switch {
		case err == unix.ENOENT:
			continue // gone already
		case err != nil:
			return err
		case !child.Dentry.IsDir():
			err = vfs.Unlink(a.creds, t)
		default:
			if err = a.empty(child, depth+1); err == nil {
				err = vfs.Rmdir(a.creds, t)
			}
		}
		if err != nil && err != unix.ENOENT {
			return err
		}
	}
	return nil
}
