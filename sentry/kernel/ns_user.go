package kernel

import (
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/sentry/fs/nsfs"
)

// User namespaces, as user_namespaces(7) has them. A task's credentials
// hold kernel ids: the ids of the sandbox's first user namespace, which
// maps every id to itself. A nested namespace maps ranges of its own ids
// onto ids of its parent (written once to /proc/<pid>/uid_map and
// gid_map), and ids cross into and out of the kernel through the
// caller's namespace at the system call boundary: an id the namespace
// does not map reads as the overflow id (65534) and cannot be set.
//
// Capabilities count relative to a namespace (capableIn): a task has its
// effective set in its own namespace, every capability in the
// namespaces its namespace's descendants it owns (their creator's euid is
// its own and their parent is its namespace), and nothing anywhere else.
// Every other namespace records the user namespace it was made in, and
// the privilege over it is asked of that one. What the sandbox's first
// user namespace owns (the first mount tree, the network, the host's
// files through the gofer) a task in a nested one never has a capability
// over.

// maxUserNSLevel is the deepest a namespace that gets a child may be
// (Linux's create_user_ns: a child of level 33 at most).
const maxUserNSLevel = 32

// OverflowID is what an id a namespace does not map reads as
// (/proc/sys/kernel/overflowuid and overflowgid).
const OverflowID = 65534

// IDExtent is one line of an id map: count ids from First in the
// namespace are the kernel ids from Lower.
type IDExtent struct{ First, Lower, Count uint32 }

// idMap is a namespace's uid or gid map; nil in the first namespace,
// which maps every id to itself.
type idMap []IDExtent

// UserNamespace is a user namespace.
type UserNamespace struct {
	id     uint64
	parent *UserNamespace // nil for the sandbox's first
	level  int
	// owner and group are the kernel euid and egid of its creator.
	owner, group uint32

	mu sync.Mutex
	// uids and gids are set once each (nil until then: nothing mapped).
	uids, gids       idMap
	uidsSet, gidsSet bool
	// setgroupsDenied: /proc/<pid>/setgroups was set to "deny" (inherited
	// by children), so setgroups(2) is refused in it.
	setgroupsDenied bool
	// parentCouldSetfcap: its creator had CAP_SETFCAP (in its own
	// namespace), which mapping kernel uid 0 from inside asks for.
	parentCouldSetfcap bool
	// count is the namespaces nested in this one, for the first one's
	// max_user_namespaces (kept in the first namespace alone).
	count atomic.Int64
}

// rootUserNS is the sandbox's first user namespace: stateless but for
// its count, so every kernel of the process may share it.
var rootUserNS = &UserNamespace{id: nsfs.SingleIno("user"), uidsSet: true, gidsSet: true}

// RootUserNamespace is the sandbox's first user namespace.
func RootUserNamespace() *UserNamespace { return rootUserNS }

// MaxUserNamespaces is /proc/sys/user/max_user_namespaces: how many user
// namespaces may exist nested in the first at once.
var MaxUserNamespaces atomic.Int64

func init() { MaxUserNamespaces.Store(15000) }

// ID is the namespace's inode number.
func (ns *UserNamespace) ID() uint64 { return ns.id }

// Parent is the namespace's parent, nil for the first.
func (ns *UserNamespace) Parent() *UserNamespace { return ns.parent }

// Level is how deep the namespace is nested (0: the first).
func (ns *UserNamespace) Level() int { return ns.level }

// OwnerUID is the kernel euid of the namespace's creator.
func (ns *UserNamespace) OwnerUID() uint32 { return ns.owner }

// IsAncestorOf reports whether ns is other or one of its ancestors.
func (ns *UserNamespace) IsAncestorOf(other *UserNamespace) bool {
	for o := other; o != nil; o = o.parent {
		if o == ns {
			return true
		}
	}
	return false
}

// newChild makes a namespace in ns for a creator with kernel euid and
// egid, holding CAP_SETFCAP or not: ENOSPC below maxUserNSLevel or past max_user_namespaces,
// EPERM if the creator's ids are not mapped in ns.
func (ns *UserNamespace) newChild(euid, egid uint32, setfcap bool) (*UserNamespace, error) {
	if ns.level > maxUserNSLevel {
		return nil, unix.ENOSPC
	}
	if _, ok := ns.MapUID(euid); !ok {
		return nil, unix.EPERM
	}
	if _, ok := ns.MapGID(egid); !ok {
		return nil, unix.EPERM
	}
	if rootUserNS.count.Add(1) > MaxUserNamespaces.Load() {
		rootUserNS.count.Add(-1)
		return nil, unix.ENOSPC
	}
	ns.mu.Lock()
	denied := ns.setgroupsDenied
	ns.mu.Unlock()
	child := &UserNamespace{id: nsfs.NewIno(), parent: ns, level: ns.level + 1, owner: euid, group: egid,
		setgroupsDenied: denied, parentCouldSetfcap: setfcap}
	// It ends when nothing holds it: credentials, namespaces it owns,
	// children, open namespace files.
	runtime.SetFinalizer(child, func(*UserNamespace) { rootUserNS.count.Add(-1) })
	return child, nil
}

func (m idMap) up(kid uint32) (uint32, bool) {
	for _, e := range m {
		if kid >= e.Lower && kid-e.Lower < e.Count {
			return e.First + (kid - e.Lower), true
		}
	}
	return 0, false
}

func (m idMap) down(id uint32) (uint32, bool) {
	for _, e := range m {
		if id >= e.First && id-e.First < e.Count {
			return e.Lower + (id - e.First), true
		}
	}
	return 0, false
}

// MapUID returns what kernel uid kid is in ns (false: not mapped).
func (ns *UserNamespace) MapUID(kid uint32) (uint32, bool) {
	return ns.translate(kid, &ns.uids, idMap.up)
}

// MapGID is MapUID for group ids.
func (ns *UserNamespace) MapGID(kid uint32) (uint32, bool) {
	return ns.translate(kid, &ns.gids, idMap.up)
}

// KernelUID returns the kernel uid that ns's uid id is (false: none).
func (ns *UserNamespace) KernelUID(id uint32) (uint32, bool) {
	return ns.translate(id, &ns.uids, idMap.down)
}

// KernelGID is KernelUID for group ids.
func (ns *UserNamespace) KernelGID(id uint32) (uint32, bool) {
	return ns.translate(id, &ns.gids, idMap.down)
}

// translate is id through ns's map m (uids or gids, read under ns.mu) in
// direction way (up: kernel to ns, down: ns to kernel). The first
// namespace maps every id to itself, with no lock: the path every
// sandbox without user namespaces takes.
func (ns *UserNamespace) translate(id uint32, m *idMap, way func(idMap, uint32) (uint32, bool)) (uint32, bool) {
	if ns.parent == nil {
		return id, id != noChange
	}
	ns.mu.Lock()
	defer ns.mu.Unlock()
	return way(*m, id)
}

// UID is kernel uid kid as ns shows it: the overflow id if unmapped.
func (ns *UserNamespace) UID(kid uint32) uint32 {
	if id, ok := ns.MapUID(kid); ok {
		return id
	}
	return OverflowID
}

// GID is UID for group ids.
func (ns *UserNamespace) GID(kid uint32) uint32 {
	if id, ok := ns.MapGID(kid); ok {
		return id
	}
	return OverflowID
}

// MapsFile reports whether ns maps both a file's owner and group, which
// a capability of ns needs to count over the file (Linux's
// privileged_wrt_inode_uidgid).
func (ns *UserNamespace) MapsFile(uid, gid uint32) bool {
	_, u := ns.MapUID(uid)
	_, g := ns.MapGID(gid)
	return u && g
}

// SetgroupsAllowed reports whether setgroups(2) may be called in ns: not
// after "deny" was written to setgroups, nor before a gid map is.
func (ns *UserNamespace) SetgroupsAllowed() bool {
	if ns.parent == nil {
		return true
	}
	ns.mu.Lock()
	defer ns.mu.Unlock()
	return ns.gidsSet && !ns.setgroupsDenied
}

// capableIn is Linux's cap_capable: whether credentials whose namespace
// is own, with effective set eff and kernel euid euid, have cap in ns.
func capableIn(own *UserNamespace, eff uint64, euid uint32, ns *UserNamespace, cap uint) bool {
	for {
		if ns == own {
			return eff&(1<<cap) != 0
		}
		if ns.level <= own.level {
			return false // ns is not below own
		}
		if ns.parent == own && ns.owner == euid {
			return true // own's process that made ns owns everything in it
		}
		ns = ns.parent
	}
}

// enterUserNamespace moves c into ns with every capability there and
// none to pass on (Linux's set_cred_user_ns): the ids stay the kernel
// ids they were.
func (c *Credentials) enterUserNamespace(ns *UserNamespace) {
	c.Lock()
	defer c.Unlock()
	c.userns = ns
	c.CapEffective, c.CapPermitted, c.CapBounding = allCaps, allCaps, allCaps
	c.CapInheritable, c.CapAmbient = 0, 0
	c.keepCaps = false
}

// The ids a system call takes and gives, through the caller's namespace.

// UIDOf is kernel uid kid as the credentials' namespace shows it.
func (c *Credentials) UIDOf(kid uint32) uint32 { return c.userns.UID(kid) }

// GIDOf is kernel gid kid as the credentials' namespace shows it.
func (c *Credentials) GIDOf(kid uint32) uint32 { return c.userns.GID(kid) }

// KernelUIDArg is the kernel uid of id in the credentials' namespace,
// noChange (-1) kept: EINVAL for an id the namespace does not map.
func (c *Credentials) KernelUIDArg(id uint32) (uint32, error) {
	if id == noChange {
		return id, nil
	}
	if k, ok := c.userns.KernelUID(id); ok {
		return k, nil
	}
	return 0, unix.EINVAL
}

// KernelGIDArg is KernelUIDArg for group ids.
func (c *Credentials) KernelGIDArg(id uint32) (uint32, error) {
	if id == noChange {
		return id, nil
	}
	if k, ok := c.userns.KernelGID(id); ok {
		return k, nil
	}
	return 0, unix.EINVAL
}

// capsIn is every capability credentials whose namespace is own, with
// effective set eff and kernel euid euid, have in ns (capableIn's rule for
// all of them at once).
func capsIn(own *UserNamespace, eff uint64, euid uint32, ns *UserNamespace) uint64 {
	for {
		if ns == own {
			return eff
		}
		if ns.level <= own.level {
			return 0
		}
		if ns.parent == own && ns.owner == euid {
			return allCaps
		}
		ns = ns.parent
	}
}

// CapsIn is the task's capabilities in ns, for a check made elsewhere
// (an IPC object's, in the namespace owning it).
func (t *Task) CapsIn(ns *UserNamespace) uint64 {
	c := t.creds
	c.Lock()
	defer c.Unlock()
	return capsIn(c.userns, c.CapEffective, c.EUID, ns)
}

// maxExtents is how many lines an id map may have
// (UID_GID_MAP_MAX_EXTENTS).
const maxExtents = 340

// MapText is /proc/<pid>/uid_map (gid false) or gid_map of a process in
// ns as a reader in namespace reader sees it: the outside ids are the
// reader's, or, for a reader in ns itself, its parent's.
func (ns *UserNamespace) MapText(gid bool, reader *UserNamespace) string {
	if ns.parent == nil {
		return fmt.Sprintf("%10d %10d %10d\n", 0, 0, uint32(noChange))
	}
	lowerNS := reader
	if reader == ns {
		lowerNS = ns.parent
	}
	ns.mu.Lock()
	m := ns.uids
	if gid {
		m = ns.gids
	}
	m = append(idMap(nil), m...)
	ns.mu.Unlock()
	var b strings.Builder
	for _, e := range m {
		up := lowerNS.MapUID
		if gid {
			up = lowerNS.MapGID
		}
		lower, ok := up(e.Lower)
		if !ok {
			lower = noChange
		}
		fmt.Fprintf(&b, "%10d %10d %10d\n", e.First, lower, e.Count)
	}
	return b.String()
}

// parseIDMap reads the lines written to an id map: three numbers each,
// count above 0, no range past 2^32, none overlapping another's inside or
// outside ids (EINVAL otherwise, as Linux's map_write).
func parseIDMap(data []byte) (idMap, error) {
	var m idMap
	for _, line := range strings.Split(string(data), "\n") {
		if strings.TrimSpace(line) == "" {
			continue
		}
		f := strings.Fields(line)
		if len(f) != 3 || len(m) == maxExtents {
			return nil, unix.EINVAL
		}
		var v [3]uint64
		for i, s := range f {
			n, err := strconv.ParseUint(s, 10, 32)
			if err != nil {
				return nil, unix.EINVAL
			}
			v[i] = n
		}
		if v[2] == 0 || v[0]+v[2] > 1<<32 || v[1]+v[2] > 1<<32 || v[0]+v[2] == 1<<32 || v[1]+v[2] == 1<<32 {
			return nil, unix.EINVAL
		}
		e := IDExtent{First: uint32(v[0]), Lower: uint32(v[1]), Count: uint32(v[2])}
		for _, o := range m {
			if overlaps(e.First, e.Count, o.First, o.Count) || overlaps(e.Lower, e.Count, o.Lower, o.Count) {
				return nil, unix.EINVAL
			}
		}
		m = append(m, e)
	}
	if len(m) == 0 {
		return nil, unix.EINVAL
	}
	return m, nil
}

func overlaps(a, an, b, bn uint32) bool {
	return uint64(a) < uint64(b)+uint64(bn) && uint64(b) < uint64(a)+uint64(an)
}

// WriteMap sets ns's uid map (gid false) or gid map from data, written by
// writer through a file opened by opener, with Linux's rules
// (user_namespaces(7), "Defining user and group ID mappings"):
//   - a map is written once (EPERM after);
//   - the opener is in ns or its parent, with CAP_SYS_ADMIN in ns (EPERM);
//   - the outside ids are the parent's, each range mapped there (EPERM);
//   - a single line mapping one id may be written by ns's owner for its
//     own euid (the gid map: its egid, once setgroups is "deny");
//   - a uid map of kernel uid 0 needs CAP_SETFCAP (mayMapRoot);
//     anything else needs CAP_SETUID (CAP_SETGID) in the parent, in both
//     the writer and the opener.
func (ns *UserNamespace) WriteMap(gid bool, data []byte, opener, writer *Credentials) error {
	if ns.parent == nil {
		return unix.EPERM
	}
	m, err := parseIDMap(data)
	if err != nil {
		return err
	}
	opener.Lock()
	oNS, oEff, oEUID, oEGID := opener.userns, opener.CapEffective, opener.EUID, opener.EGID
	opener.Unlock()
	writer.Lock()
	wNS, wEff, wEUID := writer.userns, writer.CapEffective, writer.EUID
	writer.Unlock()
	if oNS != ns && oNS != ns.parent {
		return unix.EPERM
	}
	if !capableIn(oNS, oEff, oEUID, ns, unix.CAP_SYS_ADMIN) {
		return unix.EPERM
	}
	down := ns.parent.KernelUID
	setid := uint(unix.CAP_SETUID)
	if gid {
		down, setid = ns.parent.KernelGID, unix.CAP_SETGID
	}
	for i, e := range m {
		lo, ok1 := down(e.Lower)
		hi, ok2 := down(e.Lower + e.Count - 1)
		if !ok1 || !ok2 || hi-lo != e.Count-1 {
			return unix.EPERM // not one range of the parent's
		}
		m[i].Lower = lo
	}
	ns.mu.Lock()
	denied, set := ns.setgroupsDenied, ns.uidsSet
	if gid {
		set = ns.gidsSet
	}
	ns.mu.Unlock()
	if set {
		return unix.EPERM
	}
	permitted := false
	if len(m) == 1 && m[0].Count == 1 && ns.owner == oEUID {
		permitted = !gid && m[0].Lower == oEUID || gid && denied && m[0].Lower == oEGID
	}
	if !permitted && !(capableIn(wNS, wEff, wEUID, ns.parent, setid) && capableIn(oNS, oEff, oEUID, ns.parent, setid)) {
		return unix.EPERM
	}
	if !gid && !ns.mayMapRoot(m, oNS, oEff, oEUID) {
		return unix.EPERM
	}
	ns.mu.Lock()
	defer ns.mu.Unlock()
	if gid {
		if ns.gidsSet {
			return unix.EPERM
		}
		ns.gids, ns.gidsSet = m, true
	} else {
		if ns.uidsSet {
			return unix.EPERM
		}
		ns.uids, ns.uidsSet = m, true
	}
	return nil
}

// mayMapRoot is Linux's verify_root_map: a uid map that maps kernel uid
// 0 (which could then run a file whose capabilities root of the first
// namespace set) needs CAP_SETFCAP: the creator's when the opener is in
// ns, else the opener's in ns's parent.
func (ns *UserNamespace) mayMapRoot(m idMap, oNS *UserNamespace, oEff uint64, oEUID uint32) bool {
	for _, e := range m {
		if e.Lower == 0 {
			if oNS == ns {
				return ns.parentCouldSetfcap
			}
			return capableIn(oNS, oEff, oEUID, ns.parent, unix.CAP_SETFCAP)
		}
	}
	return true
}

// SetgroupsText is /proc/<pid>/setgroups: "allow" or "deny".
func (ns *UserNamespace) SetgroupsText() string {
	ns.mu.Lock()
	defer ns.mu.Unlock()
	if ns.setgroupsDenied {
		return "deny\n"
	}
	return "allow\n"
}

// WriteSetgroups takes "allow" or "deny" (EINVAL otherwise) from a file
// opened by opener, who needs CAP_SYS_ADMIN in ns: "deny" only before the
// gid map is written, "allow" only while not denied (EPERM), as Linux's
// proc_setgroups_write.
func (ns *UserNamespace) WriteSetgroups(data []byte, opener *Credentials) error {
	var deny bool
	switch strings.TrimRight(string(data), " \t\n\x00") {
	case "allow":
	case "deny":
		deny = true
	default:
		return unix.EINVAL
	}
	opener.Lock()
	ok := capableIn(opener.userns, opener.CapEffective, opener.EUID, ns, unix.CAP_SYS_ADMIN)
	opener.Unlock()
	if !ok || ns.parent == nil {
		return unix.EPERM
	}
	ns.mu.Lock()
	defer ns.mu.Unlock()
	switch {
	case !deny && ns.setgroupsDenied, deny && ns.gidsSet:
		return unix.EPERM
	}
	if deny {
		ns.setgroupsDenied = true
	}
	return nil
}
