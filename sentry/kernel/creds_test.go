package kernel

import (
	"slices"
	"testing"

	"golang.org/x/sys/unix"
)

// capBit is the mask of capability c.
func capBit(c uint) uint64 { return 1 << c }

// fsCaps are the capabilities that follow the fs uid (Linux's CAP_FS_SET).
const fsCaps = 1<<unix.CAP_CHOWN | 1<<unix.CAP_DAC_OVERRIDE | 1<<unix.CAP_DAC_READ_SEARCH | 1<<unix.CAP_FOWNER |
	1<<unix.CAP_FSETID | 1<<unix.CAP_LINUX_IMMUTABLE | 1<<unix.CAP_MKNOD | 1<<unix.CAP_MAC_OVERRIDE

// unprivileged returns credentials with real, effective and saved ids
// (uid and gid alike) r, e, s and no capability.
func unprivileged(r, e, s uint32) *Credentials {
	c := NewCredentials(r, r, nil)
	c.EUID, c.SUID, c.FSUID = e, s, e
	c.EGID, c.SGID, c.FSGID = e, s, e
	return c
}

type ids struct{ r, e, s, fs uint32 }

func uids(c *Credentials) ids { return ids{c.UID, c.EUID, c.SUID, c.FSUID} }
func gids(c *Credentials) ids { return ids{c.GID, c.EGID, c.SGID, c.FSGID} }

func TestSetresuidWithoutCapSetuidKeepsHeldIDsOnly(t *testing.T) {
	c := unprivileged(1000, 2000, 3000)
	if err := c.SetUIDs(3000, 1000, 2000); err != nil {
		t.Fatalf("setresuid to a permutation of the held ids: %v", err)
	}
	if got, want := uids(c), (ids{3000, 1000, 2000, 1000}); got != want {
		t.Errorf("ids %+v, want %+v", got, want)
	}
	for _, try := range [][3]uint32{{4000, noChange, noChange}, {noChange, 4000, noChange}, {noChange, noChange, 4000},
		{2000, 0, noChange}} {
		before := uids(c)
		if err := c.SetUIDs(try[0], try[1], try[2]); err != unix.EPERM {
			t.Errorf("setresuid(%d, %d, %d) with ids %+v = %v, want EPERM", int32(try[0]), int32(try[1]), int32(try[2]), before, err)
		}
		if uids(c) != before {
			t.Errorf("a refused setresuid changed the ids: %+v -> %+v", before, uids(c))
		}
	}
}

func TestSetresuidWithCapSetuidSetsAnyID(t *testing.T) {
	c := NewCredentials(1000, 1000, nil)
	c.CapEffective, c.CapPermitted = capBit(unix.CAP_SETUID), capBit(unix.CAP_SETUID)
	if err := c.SetUIDs(5, 6, 7); err != nil {
		t.Fatalf("setresuid with CAP_SETUID: %v", err)
	}
	if got, want := uids(c), (ids{5, 6, 7, 6}); got != want {
		t.Errorf("ids %+v, want %+v", got, want)
	}
}

func TestSetresuidSetsTheFSUIDToTheNewEffectiveUID(t *testing.T) {
	c := NewCredentials(0, 0, nil)
	c.SetFSUID(1000)
	if err := c.SetUIDs(noChange, 2000, noChange); err != nil {
		t.Fatal(err)
	}
	if c.FSUID != 2000 {
		t.Errorf("fsuid %d after setresuid(-1, 2000, -1), want 2000", c.FSUID)
	}
}

func TestSetresgidWithoutCapSetgidKeepsHeldIDsOnly(t *testing.T) {
	c := unprivileged(1000, 2000, 3000)
	c.CapEffective = capBit(unix.CAP_SETUID) // the uid capability does not count
	if err := c.SetGIDs(2000, 3000, 1000); err != nil {
		t.Fatalf("setresgid to a permutation: %v", err)
	}
	before := gids(c)
	if err := c.SetGIDs(noChange, 4000, noChange); err != unix.EPERM {
		t.Errorf("setresgid(-1, 4000, -1) = %v, want EPERM", err)
	}
	if gids(c) != before {
		t.Errorf("a refused setresgid changed the ids: %+v -> %+v", before, gids(c))
	}
	c.CapEffective = capBit(unix.CAP_SETGID)
	if err := c.SetGIDs(4000, 4001, 4002); err != nil {
		t.Errorf("setresgid with CAP_SETGID: %v", err)
	}
	if got, want := gids(c), (ids{4000, 4001, 4002, 4001}); got != want {
		t.Errorf("gids %+v, want %+v", got, want)
	}
}

func TestSetuidWithoutCapSetuidAcceptsOnlyTheRealOrSavedUID(t *testing.T) {
	// setuid(2): "the effective user ID ... set to the real user ID or the
	// saved set-user-ID"; the effective one alone does not do.
	c := unprivileged(1000, 2000, 3000)
	if err := c.SetUID(2000); err != unix.EPERM {
		t.Errorf("setuid(euid) that is neither real nor saved = %v, want EPERM", err)
	}
	if err := c.SetUID(4000); err != unix.EPERM {
		t.Errorf("setuid(4000) = %v, want EPERM", err)
	}
	if err := c.SetUID(3000); err != nil {
		t.Fatalf("setuid(saved): %v", err)
	}
	if got, want := uids(c), (ids{1000, 3000, 3000, 3000}); got != want {
		t.Errorf("ids %+v after setuid(saved), want only the effective (and fs) uid changed: %+v", got, want)
	}
	if err := c.SetUID(1000); err != nil {
		t.Errorf("setuid(real): %v", err)
	}
}

func TestSetuidWithCapSetuidSetsAllThreeUIDs(t *testing.T) {
	c := NewCredentials(0, 0, nil)
	if err := c.SetUID(1000); err != nil {
		t.Fatal(err)
	}
	if got, want := uids(c), (ids{1000, 1000, 1000, 1000}); got != want {
		t.Errorf("ids %+v, want %+v", got, want)
	}
	if err := c.SetUID(0); err != unix.EPERM {
		t.Errorf("setuid(0) after root gave up every uid = %v, want EPERM", err)
	}
}

func TestSetgidWithoutCapSetgidAcceptsOnlyTheRealOrSavedGID(t *testing.T) {
	c := unprivileged(1000, 2000, 3000)
	if err := c.SetGID(2000); err != unix.EPERM {
		t.Errorf("setgid(egid) that is neither real nor saved = %v, want EPERM", err)
	}
	if err := c.SetGID(3000); err != nil {
		t.Fatalf("setgid(saved): %v", err)
	}
	if got, want := gids(c), (ids{1000, 3000, 3000, 3000}); got != want {
		t.Errorf("gids %+v, want %+v", got, want)
	}
	root := NewCredentials(0, 0, nil)
	if err := root.SetGID(50); err != nil {
		t.Fatal(err)
	}
	if got, want := gids(root), (ids{50, 50, 50, 50}); got != want {
		t.Errorf("gids %+v after setgid with CAP_SETGID, want %+v", got, want)
	}
	if root.CapEffective != AllCaps {
		t.Errorf("setgid changed the capabilities: %#x", root.CapEffective)
	}
}

func TestSetreuidMayNotMakeTheSavedUIDTheRealOne(t *testing.T) {
	// setreuid(2): an unprivileged process may set the real uid only to
	// the real or the effective one.
	c := unprivileged(1000, 1000, 2000)
	if err := c.SetREUID(2000, noChange); err != unix.EPERM {
		t.Errorf("setreuid(saved, -1) = %v, want EPERM", err)
	}
	if err := c.SetREUID(noChange, 2000); err != nil {
		t.Fatalf("setreuid(-1, saved): %v", err)
	}
	if err := c.SetREUID(2000, noChange); err != nil {
		t.Errorf("setreuid(effective, -1): %v", err)
	}
	if got, want := uids(c), (ids{2000, 2000, 2000, 2000}); got != want {
		t.Errorf("ids %+v, want %+v", got, want)
	}
}

func TestSetreuidSetsTheSavedUIDWhenTheRealOneIsSetOrTheEffectiveOneLeavesIt(t *testing.T) {
	const saved = 7 // root's saved uid here, so that a change shows
	for _, tc := range []struct {
		r, e uint32
		want ids
	}{
		{noChange, 1000, ids{0, 1000, 1000, 1000}}, // effective other than real: saved follows it
		{noChange, 0, ids{0, 0, saved, 0}},         // effective set to the real uid: saved stays
		{1000, noChange, ids{1000, 0, 0, 0}},       // real set: saved becomes the effective uid
		{1000, 2000, ids{1000, 2000, 2000, 2000}},
	} {
		c := NewCredentials(0, 0, nil)
		c.SUID = saved
		if err := c.SetREUID(tc.r, tc.e); err != nil {
			t.Fatalf("setreuid(%d, %d): %v", int32(tc.r), int32(tc.e), err)
		}
		if got := uids(c); got != tc.want {
			t.Errorf("setreuid(%d, %d): ids %+v, want %+v", int32(tc.r), int32(tc.e), got, tc.want)
		}
	}
}

func TestSetregidFollowsSetreuidsRules(t *testing.T) {
	c := unprivileged(1000, 1000, 2000)
	if err := c.SetREGID(2000, noChange); err != unix.EPERM {
		t.Errorf("setregid(saved, -1) = %v, want EPERM", err)
	}
	if err := c.SetREGID(noChange, 2000); err != nil {
		t.Fatalf("setregid(-1, saved): %v", err)
	}
	if got, want := gids(c), (ids{1000, 2000, 2000, 2000}); got != want {
		t.Errorf("gids %+v, want %+v", got, want)
	}
}

// The transitions of capabilities(7), "Effect of user ID changes on
// capabilities".

func TestDroppingEveryRootUIDClearsPermittedAndEffective(t *testing.T) {
	c := NewCredentials(0, 0, nil)
	if err := c.SetUIDs(1000, 1000, 1000); err != nil {
		t.Fatal(err)
	}
	if c.CapPermitted != 0 || c.CapEffective != 0 {
		t.Errorf("permitted %#x effective %#x after leaving uid 0 altogether, want none", c.CapPermitted, c.CapEffective)
	}
	if c.CapBounding != AllCaps {
		t.Errorf("the bounding set changed: %#x", c.CapBounding)
	}
}

func TestKeepCapsKeepsPermittedButClearsEffective(t *testing.T) {
	c := NewCredentials(0, 0, nil)
	c.SetKeepCaps(true)
	if err := c.SetUIDs(1000, 1000, 1000); err != nil {
		t.Fatal(err)
	}
	if c.CapPermitted != AllCaps || c.CapEffective != 0 {
		t.Errorf("with keepcaps: permitted %#x effective %#x, want %#x and none", c.CapPermitted, c.CapEffective, uint64(AllCaps))
	}
}

func TestEffectiveUIDLeavingRootClearsOnlyTheEffectiveSet(t *testing.T) {
	c := NewCredentials(0, 0, nil)
	if err := c.SetUIDs(noChange, 1000, noChange); err != nil {
		t.Fatal(err)
	}
	if c.CapEffective != 0 || c.CapPermitted != AllCaps {
		t.Errorf("euid 1000 (real and saved 0): effective %#x permitted %#x, want none and all", c.CapEffective, c.CapPermitted)
	}
	if err := c.SetUIDs(noChange, 0, noChange); err != nil {
		t.Fatal(err)
	}
	if c.CapEffective != c.CapPermitted {
		t.Errorf("euid back to 0: effective %#x, want the permitted set %#x", c.CapEffective, c.CapPermitted)
	}
}

func TestEffectiveUIDReturningToRootRestoresOnlyWhatIsPermitted(t *testing.T) {
	c := NewCredentials(0, 0, nil)
	c.SetUIDs(noChange, 1000, noChange)
	some := capBit(unix.CAP_KILL) | capBit(unix.CAP_CHOWN)
	if err := c.SetCaps(0, some, 0); err != nil {
		t.Fatal(err)
	}
	c.SetUIDs(noChange, 0, noChange)
	if c.CapEffective != some {
		t.Errorf("effective %#x, want the shrunk permitted set %#x", c.CapEffective, some)
	}
}

func TestCapabilitiesStayWhileAnyUIDIsRoot(t *testing.T) {
	c := NewCredentials(0, 0, nil)
	if err := c.SetUIDs(1000, noChange, noChange); err != nil {
		t.Fatal(err)
	}
	if err := c.SetUIDs(noChange, noChange, 1000); err != nil {
		t.Fatal(err)
	}
	if c.CapEffective != AllCaps || c.CapPermitted != AllCaps {
		t.Errorf("real and saved uid 1000, effective 0: effective %#x permitted %#x, want all", c.CapEffective, c.CapPermitted)
	}
	if err := c.SetUIDs(noChange, 1000, noChange); err != nil {
		t.Fatal(err)
	}
	if c.CapEffective != 0 || c.CapPermitted != 0 {
		t.Errorf("the last uid 0 gone: effective %#x permitted %#x, want none", c.CapEffective, c.CapPermitted)
	}
}

func TestKeepCapsKeepsPermittedWhenTheEffectiveUIDHadLeftRootFirst(t *testing.T) {
	c := NewCredentials(0, 0, nil)
	c.SetUIDs(0, 1000, 0)
	c.SetKeepCaps(true)
	if err := c.SetUIDs(1000, 1000, 1000); err != nil {
		t.Fatal(err)
	}
	if c.CapPermitted != AllCaps || c.CapEffective != 0 {
		t.Errorf("permitted %#x effective %#x, want all and none", c.CapPermitted, c.CapEffective)
	}
}

func TestForkedCredentialsKeepTheKeepCapsFlag(t *testing.T) {
	c := NewCredentials(0, 0, []uint32{5, 6})
	c.SetKeepCaps(true)
	f := c.Fork()
	if err := f.SetUIDs(1000, 1000, 1000); err != nil {
		t.Fatal(err)
	}
	if f.CapPermitted != AllCaps {
		t.Errorf("a forked child lost keepcaps: permitted %#x", f.CapPermitted)
	}
	f.Groups[0] = 99
	if c.Groups[0] != 5 {
		t.Errorf("the child's groups alias the parent's")
	}
	if uids(c) != (ids{0, 0, 0, 0}) {
		t.Errorf("the parent's ids changed with the child's: %+v", uids(c))
	}
}

func TestSetfsuidReturnsTheOldFSUIDWhetherOrNotItChanges(t *testing.T) {
	c := unprivileged(1000, 2000, 3000)
	if old := c.SetFSUID(4000); old != 2000 || c.FSUID != 2000 {
		t.Errorf("setfsuid(4000) unprivileged = %d, fsuid now %d; want 2000 and unchanged", old, c.FSUID)
	}
	for _, id := range []uint32{1000, 3000, 2000} {
		prev := c.FSUID
		if old := c.SetFSUID(id); old != prev || c.FSUID != id {
			t.Errorf("setfsuid(%d) = %d, fsuid %d; want %d and %d", id, old, c.FSUID, prev, id)
		}
	}
	root := NewCredentials(0, 0, nil)
	if root.SetFSUID(4242); root.FSUID != 4242 {
		t.Errorf("setfsuid with CAP_SETUID: fsuid %d", root.FSUID)
	}
}

func TestSetfsgidNeedsCapSetgidForAnIDNotHeld(t *testing.T) {
	c := unprivileged(1000, 2000, 3000)
	if old := c.SetFSGID(4000); old != 2000 || c.FSGID != 2000 {
		t.Errorf("setfsgid(4000) = %d, fsgid %d; want 2000 and unchanged", old, c.FSGID)
	}
	c.SetFSGID(3000)
	if c.FSGID != 3000 {
		t.Errorf("setfsgid(saved gid): fsgid %d", c.FSGID)
	}
	c.CapEffective = capBit(unix.CAP_SETGID)
	c.SetFSGID(4000)
	if c.FSGID != 4000 {
		t.Errorf("setfsgid with CAP_SETGID: fsgid %d", c.FSGID)
	}
}

func TestFSUIDLeavingRootDropsTheFileSystemCapabilities(t *testing.T) {
	c := NewCredentials(0, 0, nil)
	c.SetFSUID(1000)
	if c.CapEffective != AllCaps&^fsCaps {
		t.Errorf("effective %#x after setfsuid(1000), want every capability but the file system ones (%#x)",
			c.CapEffective, uint64(AllCaps&^fsCaps))
	}
	if c.CapPermitted != AllCaps {
		t.Errorf("permitted %#x changed", c.CapPermitted)
	}
	c.SetFSUID(0)
	if c.CapEffective != AllCaps {
		t.Errorf("effective %#x after setfsuid(0), want all again", c.CapEffective)
	}
}

func TestFSUIDReturningToRootRaisesOnlyPermittedFileSystemCapabilities(t *testing.T) {
	c := NewCredentials(0, 0, nil)
	c.SetUIDs(noChange, 1000, noChange) // effective set cleared, fsuid 1000
	if err := c.SetCaps(0, AllCaps&^capBit(unix.CAP_CHOWN), 0); err != nil {
		t.Fatal(err)
	}
	c.SetFSUID(0)
	want := uint64(fsCaps &^ capBit(unix.CAP_CHOWN))
	if c.CapEffective != want {
		t.Errorf("effective %#x after setfsuid(0) with euid 1000, want the permitted file system capabilities %#x", c.CapEffective, want)
	}
}

func TestSetgroupsNeedsCapSetgid(t *testing.T) {
	c := NewCredentials(1000, 1000, []uint32{1000})
	if err := c.SetGroups([]uint32{0}); err != unix.EPERM {
		t.Errorf("setgroups without CAP_SETGID = %v, want EPERM", err)
	}
	if !slices.Equal(c.Groups, []uint32{1000}) {
		t.Errorf("a refused setgroups changed the groups: %v", c.Groups)
	}
	c.CapEffective = capBit(unix.CAP_SETGID)
	if err := c.SetGroups([]uint32{30, 10, 20}); err != nil {
		t.Fatalf("setgroups with CAP_SETGID: %v", err)
	}
	if !slices.Equal(c.Groups, []uint32{10, 20, 30}) {
		t.Errorf("groups %v, want them sorted as Linux keeps them", c.Groups)
	}
}

func TestCapsetMayNotGrowThePermittedSet(t *testing.T) {
	c := NewCredentials(1000, 1000, nil)
	c.CapPermitted, c.CapEffective = capBit(unix.CAP_KILL), capBit(unix.CAP_KILL)
	if err := c.SetCaps(0, capBit(unix.CAP_KILL)|capBit(unix.CAP_CHOWN), 0); err != unix.EPERM {
		t.Errorf("capset raising permitted = %v, want EPERM", err)
	}
	if err := c.SetCaps(capBit(unix.CAP_CHOWN), capBit(unix.CAP_KILL), 0); err != unix.EPERM {
		t.Errorf("capset with effective outside permitted = %v, want EPERM", err)
	}
	if c.CapPermitted != capBit(unix.CAP_KILL) || c.CapEffective != capBit(unix.CAP_KILL) {
		t.Errorf("a refused capset changed the sets")
	}
	if err := c.SetCaps(0, 0, 0); err != nil {
		t.Errorf("capset dropping everything: %v", err)
	}
	if err := c.SetCaps(0, capBit(unix.CAP_KILL), 0); err != unix.EPERM {
		t.Errorf("capset taking back a dropped capability = %v, want EPERM", err)
	}
}

func TestCapsetInheritableNeedsCapSetpcapBeyondPermitted(t *testing.T) {
	c := NewCredentials(1000, 1000, nil)
	c.CapPermitted, c.CapEffective = capBit(unix.CAP_KILL), capBit(unix.CAP_KILL)
	if err := c.SetCaps(0, capBit(unix.CAP_KILL), capBit(unix.CAP_KILL)); err != nil {
		t.Errorf("inheritable within permitted: %v", err)
	}
	if err := c.SetCaps(0, capBit(unix.CAP_KILL), capBit(unix.CAP_CHOWN)); err != unix.EPERM {
		t.Errorf("inheritable beyond permitted without CAP_SETPCAP = %v, want EPERM", err)
	}
	c.CapPermitted |= capBit(unix.CAP_SETPCAP)
	c.CapEffective |= capBit(unix.CAP_SETPCAP)
	if err := c.SetCaps(c.CapEffective, c.CapPermitted, capBit(unix.CAP_CHOWN)); err != nil {
		t.Errorf("inheritable beyond permitted with CAP_SETPCAP: %v", err)
	}
}

func TestCapsetInheritableStaysWithinTheBoundingSetEvenWithCapSetpcap(t *testing.T) {
	c := NewCredentials(0, 0, nil)
	c.CapBounding = AllCaps &^ capBit(unix.CAP_NET_RAW)
	if err := c.SetCaps(AllCaps, AllCaps, capBit(unix.CAP_NET_RAW)); err != unix.EPERM {
		t.Errorf("inheritable outside the bounding set = %v, want EPERM", err)
	}
	if c.CapInheritable != 0 {
		t.Errorf("inheritable %#x after a refused capset", c.CapInheritable)
	}
	if err := c.SetCaps(AllCaps, AllCaps, capBit(unix.CAP_CHOWN)); err != nil {
		t.Errorf("inheritable inside the bounding set: %v", err)
	}
}
