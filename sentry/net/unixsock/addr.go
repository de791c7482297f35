package unixsock

import (
	"bytes"
	"fmt"
	"math/rand/v2"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/sentry/kernel"
	"github.com/moat-sandbox/moat/sentry/vfs"
)

// sunPath is offsetof(struct sockaddr_un, sun_path).
const sunPath = 2

// unnamed is the address of a socket with no name: the family alone.
var unnamed = []byte{unix.AF_UNIX, 0}

// validate checks a sockaddr_un as unix_validate_addr does: longer than
// the family, no longer than sockaddr_un, family AF_UNIX.
func validate(addr []byte) error {
	if len(addr) <= sunPath || len(addr) > unix.SizeofSockaddrUnix {
		return unix.EINVAL
	}
	if family(addr) != unix.AF_UNIX {
		return unix.EINVAL
	}
	return nil
}

func family(addr []byte) int { return int(addr[0]) | int(addr[1])<<8 }

// abstract reports an address in the abstract namespace (sun_path starts
// with a NUL).
func abstract(addr []byte) bool { return addr[sunPath] == 0 }

// pathName returns the file system name of a validated address and the
// address as the socket keeps it (unix_mkname_bsd): sun_path cut at its
// first NUL, or at addrlen, with one NUL after.
func pathName(addr []byte) (string, []byte) {
	p := addr[sunPath:]
	if i := bytes.IndexByte(p, 0); i >= 0 {
		p = p[:i]
	}
	kept := append(append(append([]byte(nil), addr[:sunPath]...), p...), 0)
	return string(p), kept
}

// autobindLocked gives an unbound socket an abstract name of five hex
// digits, as Linux's unix_autobind, when it must have one (SO_PASSCRED
// before connect or send, bind with the family alone).
func (e *endpoint) autobindLocked() error {
	if e.addr != nil {
		return nil
	}
	start := rand.Uint32N(1 << 20)
	for i := uint32(1); i <= 1<<20; i++ {
		name := fmt.Sprintf("\x00%05x", (start+i)&0xfffff)
		addr := append([]byte{unix.AF_UNIX, 0}, name...)
		k := abstractKey{e.typ, string(addr)}
		if _, used := e.ns.abstract[k]; used {
			continue
		}
		e.ns.abstract[k] = e
		e.addr = addr
		return nil
	}
	return unix.ENOSPC
}

// resolver resolves a socket's path name as Linux does, from the working
// directory.
func resolver(t *kernel.Task) vfs.Resolver {
	_, cwd := t.FS().Get()
	return t.Resolver(cwd)
}

// find returns the socket bound at a validated address, for connect and
// sendto (unix_find_other): a path must name a socket node the caller may
// write to, bound by a socket of typ (else ECONNREFUSED, or EPROTOTYPE
// for a socket of another type); an abstract name must be bound by a
// socket of typ (ECONNREFUSED). Call without ns.mu.
func (ns *namespace) find(t *kernel.Task, addr []byte, typ int) (*endpoint, error) {
	if abstract(addr) {
		ns.mu.Lock()
		defer ns.mu.Unlock()
		if e := ns.abstract[abstractKey{typ, string(addr)}]; e != nil {
			return e, nil
		}
		return nil, unix.ECONNREFUSED
	}
	name, _ := pathName(addr)
	p, err := resolver(t).Lookup(name, true)
	if err != nil {
		return nil, err
	}
	st, err := p.Dentry.Inode().Stat()
	if err != nil {
		return nil, err
	}
	c := t.FSCreds()
	if err := c.Permission(&st, vfs.MayWrite); err != nil {
		return nil, err
	}
	if st.Type() != unix.S_IFSOCK {
		return nil, unix.ECONNREFUSED
	}
	ns.mu.Lock()
	defer ns.mu.Unlock()
	e := ns.bound[vfs.FileID{Dev: st.Dev, Ino: st.Ino}]
	if e == nil {
		return nil, unix.ECONNREFUSED
	}
	if e.typ != typ {
		return nil, unix.EPROTOTYPE
	}
	return e, nil
}
