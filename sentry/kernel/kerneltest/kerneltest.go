// Package kerneltest builds small sandboxes for unit tests of the kernel
// and the syscall layer: a kernel on the fake platform (platform/fake),
// whose root is a tmpfs holding programs the test writes in Go, so that a
// test runs real tasks through real system calls without root, stubs or
// seccomp. It must never be linked into the moat binary.
package kerneltest

import (
	"encoding/binary"
	"fmt"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/platform/fake"
	"github.com/moat-sandbox/moat/sentry/fs/tmpfs"
	"github.com/moat-sandbox/moat/sentry/kernel"
	"github.com/moat-sandbox/moat/sentry/memfile"
	"github.com/moat-sandbox/moat/sentry/vfs"
)

// Timeout bounds how long Run waits for a sandbox to end.
const Timeout = 20 * time.Second

// Sandbox is a kernel on the fake platform with a tmpfs root.
type Sandbox struct {
	T        testing.TB
	Kernel   *kernel.Kernel
	Platform *fake.Platform
	MemFile  *memfile.File
	Root     vfs.Path
	// Log collects the kernel's diagnostics.
	log logBuffer
}

// One memory file serves every sandbox of a test binary: each maps the
// whole file's range of address space, which a few hundred tests would
// exhaust.
var (
	memOnce sync.Once
	mem     *memfile.File
	memErr  error
)

func sharedMemFile() (*memfile.File, error) {
	memOnce.Do(func() { mem, memErr = memfile.New() })
	return mem, memErr
}

// New returns a sandbox whose system calls go to table. It has /bin, /tmp
// (mode 1777) and /dev on its root, nothing else.
func New(t testing.TB, table kernel.SyscallTable) *Sandbox {
	t.Helper()
	mf, err := sharedMemFile()
	if err != nil {
		t.Fatalf("memory file: %v", err)
	}
	return newOn(t, table, mf)
}

// NewWithOwnMemory is New with a memory file of the sandbox's own, for a
// test that measures what the memory file holds (a memory limit, the OOM
// killer). The file is never released: few tests may use this.
func NewWithOwnMemory(t testing.TB, table kernel.SyscallTable) *Sandbox {
	t.Helper()
	mf, err := memfile.New()
	if err != nil {
		t.Fatalf("memory file: %v", err)
	}
	return newOn(t, table, mf)
}

func newOn(t testing.TB, table kernel.SyscallTable, mf *memfile.File) *Sandbox {
	t.Helper()
	var err error
	opts := tmpfs.DefaultOptions()
	opts.Mode = 0o755
	root := vfs.NewRootMount(tmpfs.New(mf, opts), "tmpfs", 0).Root()
	s := &Sandbox{T: t, Platform: fake.New(mf), MemFile: mf, Root: root}
	s.Mkdir("/bin", 0o755)
	s.Mkdir("/tmp", 0o1777)
	s.Mkdir("/dev", 0o755)
	s.Kernel, err = kernel.New(kernel.Config{Platform: s.Platform, MemFile: mf, Syscalls: table, Root: root,
		Hostname: "kerneltest", Log: s.log.printf})
	if err != nil {
		t.Fatalf("kernel: %v", err)
	}
	return s
}

// rootCreds may do anything in the tree.
var rootCreds = &vfs.Creds{Caps: kernel.AllCaps}

// Mkdir makes a directory (its parent must exist) and sets its mode
// exactly, umask aside.
func (s *Sandbox) Mkdir(name string, mode uint32) {
	s.T.Helper()
	if err := vfs.Mkdir(rootCreds, s.target(name), mode); err != nil {
		s.T.Fatalf("mkdir %s: %v", name, err)
	}
	if err := vfs.Chmod(rootCreds, s.Lookup(name), mode); err != nil {
		s.T.Fatalf("chmod %s: %v", name, err)
	}
}

// WriteFile creates name with mode and data.
func (s *Sandbox) WriteFile(name string, mode uint32, data []byte) {
	s.T.Helper()
	p, err := vfs.Create(rootCreds, s.target(name), mode)
	if err != nil {
		s.T.Fatalf("create %s: %v", name, err)
	}
	impl, err := p.Dentry.Inode().Open(unix.O_WRONLY)
	if err != nil {
		s.T.Fatalf("open %s: %v", name, err)
	}
	defer impl.Release()
	if n, err := impl.Write(vfs.NewIOSeqBuffer(data), 0); err != nil || n != len(data) {
		s.T.Fatalf("write %s: %d of %d bytes, %v", name, n, len(data), err)
	}
	if err := vfs.Chmod(rootCreds, p, mode); err != nil {
		s.T.Fatalf("chmod %s: %v", name, err)
	}
}

// ReadFile returns the contents of name.
func (s *Sandbox) ReadFile(name string) []byte {
	s.T.Helper()
	impl, err := s.Lookup(name).Dentry.Inode().Open(unix.O_RDONLY)
	if err != nil {
		s.T.Fatalf("open %s: %v", name, err)
	}
	defer impl.Release()
	var out []byte
	buf := make([]byte, 64<<10)
	for {
		n, err := impl.Read(vfs.NewIOSeqBuffer(buf), int64(len(out)))
		out = append(out, buf[:n]...)
		if err != nil || n == 0 {
			return out
		}
	}
}

// Mount attaches the file system whose root is d at the directory name,
// with MS_* flags.
func (s *Sandbox) Mount(name string, d *vfs.Dentry, fsType string, flags int) {
	s.T.Helper()
	p, err := vfs.Resolver{Root: s.Root, Start: s.Root, Creds: *rootCreds}.Lookup(name, true)
	if err != nil {
		s.T.Fatalf("mount point %s: %v", name, err)
	}
	if _, err := vfs.Attach(p, d, fsType, flags); err != nil {
		s.T.Fatalf("mount at %s: %v", name, err)
	}
}

// Lookup resolves name from the root, not following a final symlink.
func (s *Sandbox) Lookup(name string) vfs.Path {
	s.T.Helper()
	p, err := vfs.Resolver{Root: s.Root, Start: s.Root, Creds: *rootCreds}.Lookup(name, false)
	if err != nil {
		s.T.Fatalf("lookup %s: %v", name, err)
	}
	return p
}

func (s *Sandbox) target(name string) vfs.Target {
	s.T.Helper()
	tg, err := vfs.Resolver{Root: s.Root, Start: s.Root, Creds: *rootCreds}.LookupTarget(name)
	if err != nil {
		s.T.Fatalf("lookup %s: %v", name, err)
	}
	return tg
}

// AddProgram writes an executable at name that runs prog when a task
// executes it.
func (s *Sandbox) AddProgram(name string, prog fake.Program) {
	s.T.Helper()
	s.WriteFile(name, 0o755, ELF(s.Platform.Program(prog)))
}

// Init is how the sandbox's first process starts.
type Init struct {
	// UID and GID are its ids (0: root, with every capability).
	UID, GID uint32
	Groups   []uint32
	// Caps, if set, replaces the capability sets a uid starts with: the
	// sets the runtime hands the program's exec, whose rules then apply
	// (a non-root program keeps only its ambient capabilities).
	Caps    *[4]uint64 // effective, permitted, inheritable, bounding
	Ambient uint64
	Limits  map[int]kernel.Limit
	Argv    []string // default: the program's path
	Env     []string
	Cwd     string // default: /
	// PlainSignals is kernel.InitSpec.PlainSignals.
	PlainSignals bool
}

// Start runs main as the sandbox's init (pid 1) and returns at once.
func (s *Sandbox) Start(main fake.Program, in Init) {
	s.T.Helper()
	name := "/bin/init"
	s.AddProgram(name, main)
	spec := kernel.InitSpec{Argv: in.Argv, Env: in.Env, Cwd: in.Cwd, UID: in.UID, GID: in.GID, Groups: in.Groups,
		Umask: 0o022, Limits: in.Limits, PlainSignals: in.PlainSignals}
	if len(spec.Argv) == 0 {
		spec.Argv = []string{name}
	}
	if spec.Cwd == "" {
		spec.Cwd = "/"
	}
	c := kernel.NewCredentials(in.UID, in.GID, in.Groups)
	spec.CapEffective, spec.CapPermitted, spec.CapInheritable, spec.CapBounding =
		c.CapEffective, c.CapPermitted, c.CapInheritable, c.CapBounding
	if in.Caps != nil {
		spec.CapEffective, spec.CapPermitted, spec.CapInheritable, spec.CapBounding =
			in.Caps[0], in.Caps[1], in.Caps[2], in.Caps[3]
	}
	spec.CapAmbient = in.Ambient
	if err := s.Kernel.CreateInit(spec); err != nil {
		s.T.Fatalf("create init: %v", err)
	}
	if err := s.Kernel.Start(); err != nil {
		s.T.Fatalf("start: %v", err)
	}
}

// Wait waits for the sandbox to end and returns how its init ended. A
// sandbox still running after Timeout is killed and fails the test.
func (s *Sandbox) Wait() kernel.ExitStatus {
	s.T.Helper()
	select {
	case <-s.Kernel.Done():
	case <-time.After(Timeout):
		s.T.Errorf("sandbox still running after %v with %d tasks; kernel log:\n%s", Timeout, s.Kernel.NumTasks(), s.Log())
		s.Kernel.Kill(int(unix.SIGKILL))
		<-s.Kernel.Done()
	}
	return s.Kernel.ExitStatus()
}

// Run starts main as init with default settings and waits for the end.
func (s *Sandbox) Run(main fake.Program) kernel.ExitStatus {
	s.T.Helper()
	s.Start(main, Init{})
	return s.Wait()
}

// Log is what the kernel has logged so far.
func (s *Sandbox) Log() string { return s.log.String() }

type logBuffer struct {
	mu  sync.Mutex
	buf []byte
}

func (l *logBuffer) printf(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf = fmt.Appendf(l.buf, format+"\n", args...)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return string(l.buf)
}

// ELF returns a static x86-64 executable whose entry point is entry: one
// read-execute segment at 0x400000 that covers every fake entry point.
func ELF(entry uint64) []byte {
	const (
		ehdrSize = 64
		phdrSize = 56
		base     = 0x400000
	)
	b := make([]byte, ehdrSize+phdrSize)
	le := binary.LittleEndian
	copy(b, "\x7fELF\x02\x01\x01")
	le.PutUint16(b[16:], 2)  // ET_EXEC
	le.PutUint16(b[18:], 62) // EM_X86_64
	le.PutUint32(b[20:], 1)  // EV_CURRENT
	le.PutUint64(b[24:], entry)
	le.PutUint64(b[32:], ehdrSize) // e_phoff
	le.PutUint16(b[52:], ehdrSize)
	le.PutUint16(b[54:], phdrSize)
	le.PutUint16(b[56:], 1) // e_phnum
	ph := b[ehdrSize:]
	le.PutUint32(ph[0:], 1)   // PT_LOAD
	le.PutUint32(ph[4:], 4|1) // PF_R|PF_X
	le.PutUint64(ph[16:], base)
	le.PutUint64(ph[24:], base)
	le.PutUint64(ph[32:], uint64(len(b)))
	le.PutUint64(ph[40:], fake.EntryBase-base+fake.MaxEntries*16)
	le.PutUint64(ph[48:], 0x1000)
	return b
}
