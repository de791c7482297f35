package state

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/user"
	"path/filepath"
	"regexp"
	"strconv"
	"sync"

	"golang.org/x/sys/unix"
)

// Names inside a container's state directory.
const (
	stateFile         = "state.json"
	stateTemp         = ".state.json.tmp" // one writer at a time: the lock holder
	ControlSocketName = "control.sock"
	// UsernetSocketName is where moat usernet takes a new allowlist
	// (cmd/moat/usernet.go), in the directory of a container that has one.
	UsernetSocketName = "usernet.sock"
)

// Errors a caller may test for with errors.Is. Their text is runc's.
var (
	ErrNotExist = errors.New("container does not exist")
	ErrExist    = errors.New("container with id exists")
)

// idPattern is what a container id may hold. It keeps an id a single path
// component, so that no id can name a directory outside the root.
// It is compiled on first use, not at init: the sentry and the gofer,
// the same binary, run every package's init and never match it, and an
// idle sandbox keeps what its inits allocated (docs/architecture.md).
var idPattern = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9_+.-]+$`) })

// ValidateID rejects ids that are not one plain path component.
func ValidateID(id string) error {
	if !idPattern().MatchString(id) || id == "." || id == ".." {
		return fmt.Errorf("invalid container ID format: %q (use letters, digits, '_', '+', '-', '.')", id)
	}
	return nil
}

// Dir is a container's state directory, held under an exclusive flock from
// Create or Open until Close.
type Dir struct {
	ID   string
	path string
	f    *os.File
}

// Create makes the state directory of a new container and locks it. It
// fails with ErrExist, leaving the existing container untouched, when the
// id is taken.
func Create(root, id string) (*Dir, error) {
	if err := ValidateID(id); err != nil {
		return nil, err
	}
	// 0700 on the root and 0711 on each container, as runc: others may
	// reach a path inside but not list or read anything.
	if err := os.MkdirAll(root, 0o700); err != nil {
		return nil, fmt.Errorf("create state root: %w", err)
	}
	path := filepath.Join(root, id)
	if err := os.Mkdir(path, 0o711); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return nil, fmt.Errorf("%w: %s", ErrExist, id)
		}
		return nil, fmt.Errorf("create state directory: %w", err)
	}
	d, err := lock(path, id)
	if errors.Is(err, ErrNotExist) {
		// A forced delete took the lock first and removed the directory; a
		// new one at the path would not be ours to remove.
		return nil, fmt.Errorf("state directory of %s was removed while it was being created", id)
	}
	if err != nil {
		os.Remove(path)
		return nil, err
	}
	return d, nil
}

// Open locks the state directory of an existing container, waiting for any
// other command that holds it. It fails with ErrNotExist when there is no
// such container, including when the command it waited for deleted it.
func Open(root, id string) (*Dir, error) {
	if err := ValidateID(id); err != nil {
		return nil, err
	}
	return lock(filepath.Join(root, id), id)
}

func lock(path, id string) (*Dir, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, ErrNotExist
	}
	if err != nil {
		return nil, fmt.Errorf("open state directory: %w", err)
	}
	for {
		err = unix.Flock(int(f.Fd()), unix.LOCK_EX)
		if !errors.Is(err, unix.EINTR) {
			break
		}
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("lock state directory %s: %w", path, err)
	}
	// The holder we waited for may have deleted the container: a removed
	// directory has no links left.
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil || st.Nlink == 0 {
		f.Close()
		return nil, ErrNotExist
	}
	return &Dir{ID: id, path: path, f: f}, nil
}

// Unlock releases the lock but keeps the directory open, so that
// ControlSocket still reaches the sandbox: `moat run` holds no lock while it
// waits for the container, or nobody else could kill or inspect it.
func (d *Dir) Unlock() error {
	return unix.Flock(int(d.f.Fd()), unix.LOCK_UN)
}

// Close releases the lock.
func (d *Dir) Close() error {
	return d.f.Close()
}

// ControlSocket is a path to the container's control socket that reaches
// it through the open directory: it stays short whatever the root's length
// (a unix socket path holds at most 107 bytes) and cannot be redirected by
// a rename of the directory.
func (d *Dir) ControlSocket() string {
	return fmt.Sprintf("/proc/self/fd/%d/%s", d.f.Fd(), ControlSocketName)
}

// UsernetSocket is, as ControlSocket, a path to the socket where the
// container's moat usernet takes a new allowlist.
func (d *Dir) UsernetSocket() string {
	return fmt.Sprintf("/proc/self/fd/%d/%s", d.f.Fd(), UsernetSocketName)
}

// Load reads the record. A directory without one belongs to a `moat create`
// that died before it started anything: it reads as creating, with no
// processes, and so derives to stopped.
func (d *Dir) Load() (*Container, error) {
	c, err := readRecord(d.path, d.ID)
	if err != nil {
		return nil, err
	}
	c.Owner = ownerOf(d.f)
	return c, nil
}

// Save replaces the record atomically: readers that take no lock, such as
// `moat list`, see the old record or the new one, never a torn one.
func (d *Dir) Save(c *Container) error {
	data, err := json.Marshal(c)
	if err != nil {
		return fmt.Errorf("encode state of %s: %w", d.ID, err)
	}
	dirFD := int(d.f.Fd())
	fd, err := unix.Openat(dirFD, stateTemp, unix.O_WRONLY|unix.O_CREAT|unix.O_TRUNC|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0o600)
	if err != nil {
		return fmt.Errorf("write state of %s: %w", d.ID, err)
	}
	tmp := os.NewFile(uintptr(fd), stateTemp)
	_, err = tmp.Write(data)
	if closeErr := tmp.Close(); err == nil {
		err = closeErr
	}
	if err == nil {
		err = unix.Renameat(dirFD, stateTemp, dirFD, stateFile)
	}
	if err != nil {
		unix.Unlinkat(dirFD, stateTemp, 0)
		return fmt.Errorf("write state of %s: %w", d.ID, err)
	}
	return nil
}

// Remove deletes the directory and everything in it. The lock stays held
// until Close, and waiters then find the directory gone.
func (d *Dir) Remove() error {
	if err := os.RemoveAll(d.path); err != nil {
		return fmt.Errorf("remove state directory: %w", err)
	}
	return nil
}

// List reads every container's record under root without locking: records
// are replaced atomically, and a listing is a snapshot anyway. A missing
// root holds no containers.
func List(root string) ([]*Container, error) {
	entries, err := os.ReadDir(root)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list state root: %w", err)
	}
	var list []*Container
	for _, e := range entries {
		if !e.IsDir() || ValidateID(e.Name()) != nil {
			continue
		}
		path := filepath.Join(root, e.Name())
		c, err := readRecord(path, e.Name())
		if errors.Is(err, ErrNotExist) {
			continue // deleted while we listed
		}
		if err != nil {
			return nil, err
		}
		if f, err := os.Open(path); err == nil {
			c.Owner = ownerOf(f)
			f.Close()
		}
		list = append(list, c)
	}
	return list, nil
}

func readRecord(dir, id string) (*Container, error) {
	data, err := os.ReadFile(filepath.Join(dir, stateFile))
	if errors.Is(err, fs.ErrNotExist) {
		if _, statErr := os.Stat(dir); statErr != nil {
			return nil, ErrNotExist
		}
		return &Container{ID: id, Recorded: Creating}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read state of %s: %w", id, err)
	}
	var c Container
	if err := json.Unmarshal(data, &c); err != nil {
		return nil, fmt.Errorf("read state of %s: %s: %w", id, filepath.Join(dir, stateFile), err)
	}
	return &c, nil
}

// ownerOf names the user owning f, or gives the uid when no name is known.
func ownerOf(f *os.File) string {
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		return ""
	}
	uid := strconv.FormatUint(uint64(st.Uid), 10)
	if u, err := user.LookupId(uid); err == nil {
		return u.Username
	}
	return uid
}
