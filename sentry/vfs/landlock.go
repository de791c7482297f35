package vfs

import (
	"sync"

	"golang.org/x/sys/unix"
)

// Landlock (landlock(7)): a task restricting its own access to the file
// system, enforced here, at the same checks the mode bits are (open,
// exec, the calls that make, remove and rename names, truncate, ioctl on
// a device). A ruleset names the rights it handles and, for a file or
// directory, the rights allowed on it and everything beneath it;
// landlock_restrict_self adds the ruleset to the task's domain as one
// more layer, and an access goes ahead only if every layer that handles
// it allows it. Rules are on the file itself (its FileID; see layerGrant
// for a removed name), never its name, so a rename or a bind mount does
// not escape them; the walk that finds them goes up the path an access
// was made through, across mounts, as Linux's does.
//
// A task without a domain (Creds.Landlock nil) pays one nil check per
// access.

// Landlock's file-system rights (ABI 1 to 5): the rights on files, and
// those that only mean something on a directory.
const (
	landlockFileRights = unix.LANDLOCK_ACCESS_FS_EXECUTE | unix.LANDLOCK_ACCESS_FS_WRITE_FILE |
		unix.LANDLOCK_ACCESS_FS_READ_FILE | unix.LANDLOCK_ACCESS_FS_TRUNCATE | unix.LANDLOCK_ACCESS_FS_IOCTL_DEV
	LandlockRights = landlockFileRights | unix.LANDLOCK_ACCESS_FS_READ_DIR |
		unix.LANDLOCK_ACCESS_FS_REMOVE_DIR | unix.LANDLOCK_ACCESS_FS_REMOVE_FILE |
		unix.LANDLOCK_ACCESS_FS_MAKE_CHAR | unix.LANDLOCK_ACCESS_FS_MAKE_DIR |
		unix.LANDLOCK_ACCESS_FS_MAKE_REG | unix.LANDLOCK_ACCESS_FS_MAKE_SOCK |
		unix.LANDLOCK_ACCESS_FS_MAKE_FIFO | unix.LANDLOCK_ACCESS_FS_MAKE_BLOCK |
		unix.LANDLOCK_ACCESS_FS_MAKE_SYM | unix.LANDLOCK_ACCESS_FS_REFER
)

// LandlockMaxLayers is how many rulesets one domain stacks (Linux's
// LANDLOCK_MAX_NUM_LAYERS): one more is E2BIG.
const LandlockMaxLayers = 16

// LandlockHandled is what a ruleset handles: file-system rights,
// network rights (on TCP ports) and scopes.
type LandlockHandled struct {
	FS, Net, Scoped uint64
}

// LandlockRuleset is a ruleset being built: what landlock_create_ruleset
// makes and landlock_add_rule fills. It may be added to domains while it
// still grows; each domain takes a copy.
type LandlockRuleset struct {
	handled LandlockHandled // the rights rules may allow, as created

	mu    sync.Mutex
	rules map[FileID]layerGrant // layer unset until the ruleset is a domain's
	ports map[uint16]uint64
}

// NewLandlockRuleset returns an empty ruleset handling h.
func NewLandlockRuleset(h LandlockHandled) *LandlockRuleset {
	return &LandlockRuleset{handled: h, rules: make(map[FileID]layerGrant), ports: make(map[uint16]uint64)}
}

// Handled returns what the ruleset was made to handle.
func (rs *LandlockRuleset) Handled() LandlockHandled { return rs.handled }

// AddRule allows access on the file at p and beneath it: access must be
// within the ruleset's file-system rights (EINVAL), and only rights on
// files for a file that is not a directory (EINVAL). A file with no
// identity (one of the sentry's own, outside any file system) takes no
// rule: EBADFD.
func (rs *LandlockRuleset) AddRule(p Path, access uint64) error {
	if access&^rs.handled.FS != 0 {
		return unix.EINVAL
	}
	if p.Dentry == nil || p.Mount == anonMount {
		return unix.EBADFD
	}
	if !p.Dentry.isDir && access&^landlockFileRights != 0 {
		return unix.EINVAL
	}
	id, ok := p.Dentry.landlockID()
	if !ok {
		return unix.EBADFD
	}
	rs.mu.Lock()
	defer rs.mu.Unlock()
	g := rs.rules[id]
	if g.file == nil || g.file.Deleted() {
		g.file = p.Dentry
	}
	g.access |= access
	rs.rules[id] = g
	return nil
}

// AddPortRule allows access (network rights) on a TCP port: EINVAL for
// rights the ruleset does not handle or a port past 65535.
func (rs *LandlockRuleset) AddPortRule(port, access uint64) error {
	if access&^rs.handled.Net != 0 || port > 0xffff {
		return unix.EINVAL
	}
	rs.mu.Lock()
	defer rs.mu.Unlock()
	rs.ports[uint16(port)] |= access
	return nil
}

// LandlockDomain is the stack of rulesets a task is restricted by. It
// never changes once made: a task that adds a layer gets a new domain,
// and the tasks sharing the old one keep it. It holds the network rules
// and scopes too, which the socket and signal calls check.
type LandlockDomain struct {
	// layers holds what each layer handles. A layer that handles any
	// file-system right handles REFER too, which only a rule allows
	// (landlock(7): denied by default even where a ruleset does not
	// name it).
	layers []LandlockHandled
	rules  map[FileID][]layerGrant
	ports  map[uint16][]layerGrant
	// parent is the domain this one was made on (nil: the first layer).
	parent *LandlockDomain
}

// layerGrant is the rights one layer allows on a file and beneath it, or
// on a port. file is a name the rule's file was given by: the file keeps
// its device and inode number only while it lives, and a number a host
// file system gives again to a new file once the old one was removed
// must not carry the rule over. So once that name is removed, the rule
// names the file through that dentry alone (an open file, a working
// directory), and another file of the same numbers is not it. (A rule
// on a file with other hard links then no longer follows them: denied,
// not allowed, where Linux would still allow.)
type layerGrant struct {
	layer  int
	access uint64
	file   *Dentry // nil for a port
}

// names reports whether g, a rule on d's device and inode numbers, is
// one on d's file.
func (g *layerGrant) names(d *Dentry) bool {
	return g.file == nil || g.file == d || !g.file.Deleted()
}

// Restrict returns d with rs on top, as landlock_restrict_self makes a
// task's new domain: E2BIG past LandlockMaxLayers. d may be nil (no
// domain yet).
func (d *LandlockDomain) Restrict(rs *LandlockRuleset) (*LandlockDomain, error) {
	n := d.Layers()
	if n >= LandlockMaxLayers {
		return nil, unix.E2BIG
	}
	nd := &LandlockDomain{layers: make([]LandlockHandled, n, n+1), parent: d}
	if d != nil {
		copy(nd.layers, d.layers)
	}
	h := rs.handled
	if h.FS != 0 {
		h.FS |= unix.LANDLOCK_ACCESS_FS_REFER
	}
	nd.layers = append(nd.layers, h)
	rs.mu.Lock()
	defer rs.mu.Unlock()
	var oldRules map[FileID][]layerGrant
	var oldPorts map[uint16][]layerGrant
	if d != nil {
		oldRules, oldPorts = d.rules, d.ports
	}
	nd.rules = addLayer(oldRules, rs.rules, func(g layerGrant) layerGrant { g.layer = n; return g })
	nd.ports = addLayer(oldPorts, rs.ports, func(access uint64) layerGrant { return layerGrant{layer: n, access: access} })
	return nd, nil
}

// addLayer returns old's grants with those of rules as a new layer, each
// made by grant. old is shared with the domain below and left as it is.
func addLayer[K comparable, V any](old map[K][]layerGrant, rules map[K]V, grant func(V) layerGrant) map[K][]layerGrant {
	out := make(map[K][]layerGrant, len(old)+len(rules))
	for k, g := range old {
		out[k] = g
	}
	for k, v := range rules {
		g := out[k]
		out[k] = append(append(make([]layerGrant, 0, len(g)+1), g...), grant(v))
	}
	return out
}

// Layers is how many rulesets the domain stacks.
func (d *LandlockDomain) Layers() int {
	if d == nil {
		return 0
	}
	return len(d.layers)
}

// HandlesFS reports whether some layer of d handles file-system rights:
// a task in such a domain may not change its mount tree.
func (d *LandlockDomain) HandlesFS() bool {
	if d == nil {
		return false
	}
	for _, l := range d.layers {
		if l.FS != 0 {
			return true
		}
	}
	return false
}

// Encloses reports whether d is no domain, o itself, or a domain o was
// made on: whether a task in d may ptrace one in o (Linux's
// domain_scope_le). A task may not reach one less restricted than itself.
func (d *LandlockDomain) Encloses(o *LandlockDomain) bool {
	if d == nil {
		return true
	}
	for ; o != nil; o = o.parent {
		if o == d {
			return true
		}
	}
	return false
}

// layerRights holds, per layer, a set of rights: those still denied
// while a walk looks for rules, or those a walk found allowed.
type layerRights [LandlockMaxLayers]uint64

// denied returns, per layer, the rights in want the layer handles.
func (d *LandlockDomain) denied(want uint64) (m layerRights) {
	for i, l := range d.layers {
		m[i] = want & l.FS
	}
	return m
}

// any reports whether some layer still has a right in m.
func (m *layerRights) any() bool {
	for _, r := range m {
		if r != 0 {
			return true
		}
	}
	return false
}

// union returns the rights some layer has.
func (m *layerRights) union() uint64 {
	var u uint64
	for _, r := range m {
		u |= r
	}
	return u
}

// grant applies the rules on the file at d to m: each layer's rights
// there leave its denied set.
func (dom *LandlockDomain) grant(m *layerRights, d *Dentry) {
	id, ok := d.landlockID()
	if !ok {
		return
	}
	for _, g := range dom.rules[id] {
		if g.names(d) {
			m[g.layer] &^= g.access
		}
	}
}

// deniedAt returns, per layer, the rights of want that no rule on p's
// path allows.
func (dom *LandlockDomain) deniedAt(p Path, want uint64) layerRights {
	m := dom.denied(want)
	if !m.any() {
		return m
	}
	chain := landlockWalk(p)
	if chain == nil {
		return layerRights{} // outside every file system: a pipe, an nsfs file
	}
	for _, d := range chain {
		dom.grant(&m, d)
		if !m.any() {
			break
		}
	}
	return m
}

// Check reports whether every layer allows want on the file at p: nil,
// or EACCES. A file outside every file system (a pipe, a socket, a file
// reached through a magic link with no name) passes, as Linux's internal
// mounts do.
func (dom *LandlockDomain) Check(p Path, want uint64) error {
	if dom == nil {
		return nil
	}
	if m := dom.deniedAt(p, want); m.any() {
		return unix.EACCES
	}
	return nil
}

// landlockWalk returns the dentries whose rules apply to p, in Linux's
// order: p, its parents up to its mount's root, then on from where that
// mount is attached, whose own dentry the mount hides and which is
// skipped, up to the root of the whole tree (a chroot does not stop the
// walk). A directory moved out of a bind mount's tree reaches its file
// system's root without passing the mount's: the walk goes on from the
// mount's root, as Linux does since its erratum 3. Nothing for a file
// outside every file system.
func landlockWalk(p Path) []*Dentry {
	if p.Dentry == nil || p.Mount == nil || p.Mount == anonMount {
		return nil
	}
	renameMu.RLock()
	defer renameMu.RUnlock()
	out := make([]*Dentry, 0, 8)
	m, d := p.Mount, p.Dentry
	visible := true
	for {
		if visible {
			out = append(out, d)
		}
		visible = true
		switch {
		case d == m.root:
			if m.parent == nil {
				return out
			}
			m, d = m.parent, m.point
			visible = false
		case d.parent == nil:
			d = m.root
		default:
			d = d.parent
		}
	}
}

// landlockID returns the identity rules name the dentry's file by,
// computed once: a dentry's inode never changes. The mount points the
// sentry makes (MakeMountPoint) have none: they are all one fake inode.
func (d *Dentry) landlockID() (FileID, bool) {
	if id := d.llID.Load(); id != nil {
		return id.id, id.ok
	}
	var id landlockIdent
	switch d.inode.(type) {
	case emptyDir, emptyFile:
	default:
		id.id, id.ok = inodeID(d.inode)
	}
	d.llID.Store(&id)
	return id.id, id.ok
}

// landlockIdent is a dentry's identity for Landlock's rules, once known.
type landlockIdent struct {
	id FileID
	ok bool // false: a file no rule can name
}

// LandlockOpen checks opening the file at p for want (READ_FILE or
// READ_DIR, WRITE_FILE, EXECUTE): EACCES unless every layer allows each.
// It also returns the rights an open file keeps for later calls that the
// domain denies there: TRUNCATE (ftruncate) and, for a device, IOCTL_DEV.
func (dom *LandlockDomain) LandlockOpen(p Path, want uint64, device bool) (deniedLater uint64, err error) {
	if dom == nil {
		return 0, nil
	}
	later := uint64(unix.LANDLOCK_ACCESS_FS_TRUNCATE)
	if device {
		later |= unix.LANDLOCK_ACCESS_FS_IOCTL_DEV
	}
	m := dom.deniedAt(p, want|later)
	d := m.union()
	if d&want != 0 {
		return 0, unix.EACCES
	}
	return d & later, nil
}

// landlockMake is the right to make a file of mode's type in a directory.
func landlockMake(mode uint32) uint64 {
	switch mode & unix.S_IFMT {
	case unix.S_IFDIR:
		return unix.LANDLOCK_ACCESS_FS_MAKE_DIR
	case unix.S_IFLNK:
		return unix.LANDLOCK_ACCESS_FS_MAKE_SYM
	case unix.S_IFCHR:
		return unix.LANDLOCK_ACCESS_FS_MAKE_CHAR
	case unix.S_IFBLK:
		return unix.LANDLOCK_ACCESS_FS_MAKE_BLOCK
	case unix.S_IFIFO:
		return unix.LANDLOCK_ACCESS_FS_MAKE_FIFO
	case unix.S_IFSOCK:
		return unix.LANDLOCK_ACCESS_FS_MAKE_SOCK
	}
	return unix.LANDLOCK_ACCESS_FS_MAKE_REG // S_IFREG, and a mode of 0
}

// landlockRemove is the right to remove d, a file or directory, from
// its directory (none for no file).
func landlockRemove(d *Dentry) uint64 {
	if d == nil {
		return 0
	}
	return landlockRemoveRight(d.isDir)
}

// landlockRemoveRight is the right rmdir (dir) or unlink needs.
func landlockRemoveRight(dir bool) uint64 {
	if dir {
		return unix.LANDLOCK_ACCESS_FS_REMOVE_DIR
	}
	return unix.LANDLOCK_ACCESS_FS_REMOVE_FILE
}

// parentDir is the directory holding p's file on p's mount, as Landlock
// compares it with a link's new directory: p itself at the mount's root.
func (p Path) parentDir() Path {
	renameMu.RLock()
	defer renameMu.RUnlock()
	if p.Dentry == p.Mount.root || p.Dentry.parent == nil {
		return p
	}
	return Path{p.Mount, p.Dentry.parent}
}
