package kernel

import (
	"sync"

	"github.com/moat-sandbox/moat/sentry/fs/nsfs"
)

// UTSNamespace is a UTS namespace: the host and domain names uname(2)
// reports, which sethostname(2) and setdomainname(2) change for the tasks
// in it alone.
type UTSNamespace struct {
	id       uint64 // the inode number /proc/<pid>/ns/uts shows
	owner    *UserNamespace
	mu       sync.Mutex
	hostname string
	domain   string
}

// defaultDomain is a new system's NIS domain name (UTS_DOMAINNAME).
const defaultDomain = "(none)"

func newUTSNamespace(hostname, domain string, owner *UserNamespace) *UTSNamespace {
	return &UTSNamespace{id: nsfs.NewIno(), hostname: hostname, domain: domain, owner: owner}
}

// Owner is the user namespace the namespace was made in, which
// sethostname(2) asks for CAP_SYS_ADMIN in.
func (u *UTSNamespace) Owner() *UserNamespace { return u.owner }

// ID is the namespace's inode number.
func (u *UTSNamespace) ID() uint64 { return u.id }

// Names returns the host and domain names.
func (u *UTSNamespace) Names() (hostname, domain string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.hostname, u.domain
}

// SetHostname and SetDomainname change the names (the caller checked the
// privilege and the length).
func (u *UTSNamespace) SetHostname(name string) {
	u.mu.Lock()
	u.hostname = name
	u.mu.Unlock()
}

func (u *UTSNamespace) SetDomainname(name string) {
	u.mu.Lock()
	u.domain = name
	u.mu.Unlock()
}

// copy is a new namespace with u's names (unshare or clone with
// CLONE_NEWUTS).
func (u *UTSNamespace) copy(owner *UserNamespace) *UTSNamespace {
	h, d := u.Names()
	return newUTSNamespace(h, d, owner)
}
