package kernel

import (
	"bytes"
	"io"
	"path"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/platform"
	"github.com/moat-sandbox/moat/sentry/arch"
	"github.com/moat-sandbox/moat/sentry/loader"
	"github.com/moat-sandbox/moat/sentry/mm"
	"github.com/moat-sandbox/moat/sentry/vfs"
)

// Limits on interpreter scripts, as in Linux's binfmt_script.
const (
	scriptHeaderMax = 256 // BINPRM_BUF_SIZE
	// maxScriptDepth is how many scripts may run one another: Linux's
	// exec_binprm gives up (ELOOP) when a sixth would hand over to the
	// interpreter it has just opened.
	maxScriptDepth = 5
)

// image is a program ready to run: its memory (not yet in an address
// space: see attachFresh and Task.Execve) and registers.
type image struct {
	mm   *mm.MemoryManager
	regs arch.Registers
	comm string
	exe  vfs.Path
	// creds are what the program runs with (forExec); secure is AT_SECURE.
	creds  *Credentials
	secure bool
}

// execFile is an open executable: its path and a reader over its bytes.
type execFile struct {
	path vfs.Path
	r    io.ReaderAt
}

// ExecTarget is the program execve runs: a name to resolve, or a file
// already resolved (execveat with AT_EMPTY_PATH).
type ExecTarget struct {
	Res  vfs.Resolver
	Name string
	Path *vfs.Path
	// Cwd resolves a script's interpreter, which Linux looks up from the
	// working directory whatever named the script.
	Cwd vfs.Resolver
	// Filename is what the program is told it is (AT_EXECFN, and a
	// script's argument to its interpreter): the name, or /dev/fd/N for a
	// program named through a file descriptor.
	Filename string
	// NoFollow refuses a symlink as the program (AT_SYMLINK_NOFOLLOW).
	NoFollow bool
	// PathInaccessible: the program was named through a close-on-exec fd,
	// so its /dev/fd name will be gone: a script cannot run.
	PathInaccessible bool
	// NoRandomize lays the program out without random offsets
	// (personality's ADDR_NO_RANDOMIZE), as gdb runs what it debugs.
	NoRandomize bool
}

// openExec resolves name for execution and opens it: it must be a regular
// file the resolver's credentials may execute.
func (k *Kernel) openExec(res vfs.Resolver, name string) (execFile, error) {
	p, err := res.Lookup(name, true)
	if err != nil {
		return execFile{}, err
	}
	return k.openExecPath(p, &res.Creds)
}

// openExecPath opens a resolved program for creds, as Linux's
// do_open_execat: a regular file they have execute permission on (root's
// capabilities pass only a file with some execute bit), on a mount that
// is not noexec. Read permission is not needed, but a Landlock domain
// must allow reading and executing it.
func (k *Kernel) openExecPath(p vfs.Path, creds *vfs.Creds) (execFile, error) {
	if p.Mount != nil && p.Mount.Flags&unix.MS_NOEXEC != 0 {
		return execFile{}, unix.EACCES
	}
	st, err := p.Dentry.Inode().Stat()
	if err != nil {
		return execFile{}, err
	}
	if st.Type() != unix.S_IFREG {
		return execFile{}, unix.EACCES
	}
	if err := creds.Permission(&st, vfs.MayExec); err != nil {
		return execFile{}, err
	}
	// Linux opens a program for reading and execution (FMODE_EXEC).
	if err := creds.Landlock.Check(p, unix.LANDLOCK_ACCESS_FS_EXECUTE|unix.LANDLOCK_ACCESS_FS_READ_FILE); err != nil {
		return execFile{}, err
	}
	impl, err := p.Dentry.Inode().Open(unix.O_RDONLY)
	if err != nil {
		return execFile{}, err
	}
	r, ok := impl.(io.ReaderAt)
	if !ok {
		impl.Release()
		return execFile{}, unix.ENOEXEC
	}
	return execFile{path: p, r: r}, nil
}

func (f execFile) close() {
	if impl, ok := f.r.(vfs.FileImpl); ok {
		impl.Release()
	}
}

// loadProgram builds a new address space running the program target
// names, as execve does: interpreter scripts are followed, ELF images
// loaded. The image holds the credentials the program gets from creds,
// the ELF file's set-ID bits and what makes a gain unsafe: a script's own
// bits count for nothing, its interpreter's do, as on Linux.
func (k *Kernel) loadProgram(target ExecTarget, creds *Credentials, unsafe execUnsafe, argv, envv []string) (*image, error) {
	res, name, filename := target.Res, target.Name, target.Filename
	if filename == "" {
		filename = name
	}
	// The program is told the name execve was given (AT_EXECFN) and named
	// after it, whatever interpreters run it (fs/exec.c: bprm->filename).
	execfn := filename
	if len(argv) == 0 {
		argv = []string{""} // Linux gives a program run with no arguments one empty one
	}
	for depth := 0; ; depth++ {
		var (
			f   execFile
			err error
		)
		switch {
		case depth == 0 && target.Path != nil:
			f, err = k.openExecPath(*target.Path, &res.Creds)
		case depth == 0 && target.NoFollow:
			var p vfs.Path
			if p, err = res.Lookup(name, false); err == nil {
				if st, _ := p.Dentry.Inode().Stat(); st.Type() == unix.S_IFLNK {
					err = unix.ELOOP
				} else {
					f, err = k.openExecPath(p, &res.Creds)
				}
			}
		default:
			f, err = k.openExec(res, name)
		}
		if err != nil {
			return nil, err
		}
		if depth > maxScriptDepth {
			f.close()
			return nil, unix.ELOOP
		}
		var head [scriptHeaderMax]byte
		n, err := f.r.ReadAt(head[:], 0)
		if err != nil && err != io.EOF {
			f.close()
			return nil, err
		}
		if n >= 2 && head[0] == '#' && head[1] == '!' {
			f.close()
			words, err := parseShebang(head[:n])
			if err != nil {
				return nil, err
			}
			if depth == 0 && target.PathInaccessible {
				return nil, unix.ENOENT
			}
			// argv[0] is replaced by the interpreter, its argument and the
			// script's path.
			argv = append(append(words, filename), argv[1:]...)
			name, filename, res = interpName(words[0]), words[0], target.Cwd
			continue
		}
		next, secure := creds.forExec(programOf(f.path), unsafe)
		img, err := k.loadELF(res, target.Cwd, next, secure, f, execfn, argv, envv, target.NoRandomize)
		f.close()
		return img, err
	}
}

// parseShebang parses the "#!" line at the start of head, a script's
// first bytes (at most scriptHeaderMax are read), as Linux's binfmt_script
// does, and returns the interpreter and its optional argument. Blanks and
// tabs separate them; the argument is the rest of the line, trailing blanks
// and tabs dropped, and a NUL ends either. When the buffer holds no
// newline, the line runs to its last byte, which gives way to the NUL that
// ends it: the argument may be cut, but the interpreter's name must end
// within the buffer (ENOEXEC otherwise), as must a line of blanks.
func parseShebang(head []byte) ([]string, error) {
	if len(head) < 2 || head[0] != '#' || head[1] != '!' {
		return nil, unix.ENOEXEC
	}
	var buf [scriptHeaderMax]byte // past the file's end, NULs
	copy(buf[:], head)
	blank := func(c byte) bool { return c == ' ' || c == '\t' }
	// nonBlank and nameEnd return the first index in [i, j] that is not
	// blank, or that ends a name (a blank or a NUL); -1 if none.
	nonBlank := func(i, j int) int {
		for ; i <= j; i++ {
			if !blank(buf[i]) {
				return i
			}
		}
		return -1
	}
	nameEnd := func(i, j int) int {
		for ; i <= j; i++ {
			if blank(buf[i]) || buf[i] == 0 {
				return i
			}
		}
		return -1
	}
	end := bytes.IndexByte(buf[:], '\n')
	if end < 0 {
		last := len(buf) - 1
		if first := nonBlank(2, last); first < 0 || nameEnd(first, last) < 0 {
			return nil, unix.ENOEXEC
		}
		end = last
	}
	for blank(buf[end-1]) {
		end--
	}
	name := nonBlank(2, end)
	if name < 0 || name == end {
		return nil, unix.ENOEXEC
	}
	arg := -1
	sep := nameEnd(name, end)
	if sep >= 0 && buf[sep] != 0 {
		arg = nonBlank(sep, end)
	}
	buf[end] = 0
	if arg >= 0 {
		buf[sep] = 0
	}
	cstring := func(b []byte) string { return string(b[:bytes.IndexByte(b, 0)]) }
	words := []string{cstring(buf[name:])}
	if arg >= 0 {
		words = append(words, cstring(buf[arg:]))
	}
	return words, nil
}

// interpName is the name an interpreter is looked up by: Linux looks up
// an empty one, as the kernel's own names may be, as the working directory.
func interpName(name string) string {
	if name == "" {
		return "."
	}
	return name
}

// loadELF loads an ELF executable into a new memory manager. Its
// interpreter is looked up from cwd, as Linux opens PT_INTERP's name.
func (k *Kernel) loadELF(res, cwd vfs.Resolver, creds *Credentials, secure bool, f execFile, name string, argv, envv []string,
	noRandomize bool) (*image, error) {
	randomPages := randomPages
	if noRandomize {
		randomPages = func(uint64) uintptr { return 0 }
	}
	m := mm.New(k.MemFile, nil, k.Platform.MaxUserAddress())
	ok := false
	defer func() {
		if !ok {
			m.Release()
		}
	}()
	top := m.MaxAddr() - randomPages(1<<16)
	m.SetMmapBase(top - loader.StackSize - 128<<20 - randomPages(1<<16))
	img, err := loader.Load(m, f.r, vfs.PathName(f.path, res.Root), func(p string) (loader.File, error) {
		ef, err := k.openExec(cwd, interpName(p))
		if err != nil {
			return nil, err
		}
		return ef.r, nil
	})
	if err != nil {
		return nil, err
	}
	m.SetBrkBase(img.BrkStart + randomPages(1<<13))

	vdsoAddr, err := k.mapVDSO(m)
	if err != nil {
		return nil, err
	}
	var rnd [16]byte
	unix.Getrandom(rnd[:], 0)
	sa := loader.StackArgs{Argv: argv, Envv: envv, Execfn: name, Random: rnd, VDSO: vdsoAddr,
		UID: creds.UID, EUID: creds.EUID, GID: creds.GID, EGID: creds.EGID, Secure: secure,
		HWCap: k.HWCap, HWCap2: k.HWCap2, MinSigStk: k.MinSigStackSize}
	sp, err := loader.SetupStack(m, top, img, sa)
	if err != nil {
		return nil, err
	}
	ok = true
	comm := path.Base(name)
	if len(comm) > 15 {
		comm = comm[:15] // TASK_COMM_LEN, less its NUL: init's name too
	}
	return &image{mm: m, comm: comm, exe: f.path, creds: creds, secure: secure,
		regs: arch.Registers{Rip: uint64(img.Entry), Rsp: uint64(sp), Eflags: arch.InitialEflags}}, nil
}

// programOf is what of the file at p decides an exec's credentials.
func programOf(p vfs.Path) execProgram {
	st, _ := p.Dentry.Inode().Stat()
	return execProgram{Mode: st.Mode, UID: st.UID, GID: st.GID,
		NoSUID: p.Mount != nil && p.Mount.Flags&unix.MS_NOSUID != 0}
}

// attachFresh puts m in a new address space and returns a thread in it.
func (k *Kernel) attachFresh(m *mm.MemoryManager) (platform.Context, error) {
	as, err := k.Platform.NewAddressSpace()
	if err != nil {
		return nil, err
	}
	ctx, err := as.NewContext()
	if err != nil {
		as.Release()
		return nil, err
	}
	m.Attach(as)
	return ctx, nil
}

// randomPages returns a random multiple of the page size below n pages.
func randomPages(n uint64) uintptr {
	var b [8]byte
	unix.Getrandom(b[:], 0)
	v := uint64(b[0]) | uint64(b[1])<<8 | uint64(b[2])<<16 | uint64(b[3])<<24
	return uintptr(v%n) * mm.PageSize
}
