package kernel

import (
	"testing"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/sentry/vfs"
)

// inNewUserNS returns credentials of uid and gid 1000 without
// capabilities, in a user namespace of their own (not yet mapped).
func inNewUserNS(t *testing.T) (*Credentials, *UserNamespace) {
	t.Helper()
	c := NewCredentials(1000, 1000, nil)
	ns, err := c.userns.newChild(c.EUID, c.EGID, false)
	if err != nil {
		t.Fatal(err)
	}
	c.enterUserNamespace(ns)
	return c, ns
}

func TestNewUserNamespaceGivesEveryCapabilityInsideAlone(t *testing.T) {
	c, ns := inNewUserNS(t)
	if c.CapEffective != allCaps || c.CapBounding != allCaps || c.CapInheritable != 0 {
		t.Fatalf("caps %x %x %x, want all, all, none", c.CapEffective, c.CapBounding, c.CapInheritable)
	}
	if !capableIn(c.userns, c.CapEffective, c.EUID, ns, unix.CAP_SYS_ADMIN) {
		t.Error("no CAP_SYS_ADMIN in its own namespace")
	}
	if capableIn(c.userns, c.CapEffective, c.EUID, rootUserNS, unix.CAP_SYS_ADMIN) {
		t.Error("CAP_SYS_ADMIN in the first namespace from a nested one")
	}
	if capsIn(c.userns, c.CapEffective, c.EUID, rootUserNS) != 0 {
		t.Error("capabilities in the first namespace from a nested one")
	}
	// The creator, in the parent with no capabilities, owns the child.
	parent := NewCredentials(1000, 1000, nil)
	if !capableIn(parent.userns, parent.CapEffective, parent.EUID, ns, unix.CAP_SYS_ADMIN) {
		t.Error("the owner has no capability in the namespace it made")
	}
	other := NewCredentials(1001, 1001, nil)
	if capableIn(other.userns, other.CapEffective, other.EUID, ns, unix.CAP_SYS_ADMIN) {
		t.Error("another user of the parent has a capability in it")
	}
	// A sibling namespace grants nothing over this one.
	sib, _ := inNewUserNS(t)
	if capableIn(sib.userns, sib.CapEffective, sib.EUID, ns, unix.CAP_SYS_ADMIN) {
		t.Error("a sibling namespace's root has a capability in it")
	}
}

func TestUnmappedIDsReadAsOverflow(t *testing.T) {
	c, ns := inNewUserNS(t)
	if got := c.UIDOf(c.UID); got != OverflowID {
		t.Errorf("unmapped uid reads %d, want %d", got, OverflowID)
	}
	if _, err := c.KernelUIDArg(0); err != unix.EINVAL {
		t.Errorf("unmapped uid argument: %v, want EINVAL", err)
	}
	if err := ns.WriteMap(false, []byte("0 1000 1\n"), c, c); err != nil {
		t.Fatal(err)
	}
	if got := c.UIDOf(1000); got != 0 {
		t.Errorf("kernel uid 1000 reads %d, want 0", got)
	}
	if got := c.UIDOf(0); got != OverflowID {
		t.Errorf("kernel uid 0 reads %d, want %d", got, OverflowID)
	}
	if k, err := c.KernelUIDArg(0); err != nil || k != 1000 {
		t.Errorf("uid 0 is kernel %d (%v), want 1000", k, err)
	}
	if !rootUserNS.MapsFile(0, 0) || ns.MapsFile(0, 0) {
		t.Error("MapsFile wrong for root's file")
	}
}

func TestIDMapWriteRules(t *testing.T) {
	c, ns := inNewUserNS(t)
	for _, tc := range []struct {
		text string
		want error
	}{
		{"0 0 1\n", unix.EPERM},               // an id the writer does not have
		{"0 1000 2\n", unix.EPERM},            // more than its own
		{"0 1000 1\n1 1000 1\n", unix.EINVAL}, // overlapping outside
		{"0 1000 0\n", unix.EINVAL},           // empty
		{"0 x 1\n", unix.EINVAL},
		{"", unix.EINVAL},
		{"4294967295 1000 1\n", unix.EINVAL}, // past the ids
	} {
		if err := ns.WriteMap(false, []byte(tc.text), c, c); err != tc.want {
			t.Errorf("uid_map %q: %v, want %v", tc.text, err, tc.want)
		}
	}
	if err := ns.WriteMap(true, []byte("0 1000 1\n"), c, c); err != unix.EPERM {
		t.Errorf("gid_map before setgroups deny: %v, want EPERM", err)
	}
	if err := ns.WriteMap(false, []byte("0 1000 1\n"), c, c); err != nil {
		t.Fatal(err)
	}
	if err := ns.WriteMap(false, []byte("0 1000 1\n"), c, c); err != unix.EPERM {
		t.Errorf("second uid_map: %v, want EPERM", err)
	}
	if err := ns.WriteSetgroups([]byte("deny\n"), c); err != nil {
		t.Fatal(err)
	}
	if err := ns.WriteMap(true, []byte("0 1000 1\n"), c, c); err != nil {
		t.Fatal(err)
	}
	if err := ns.WriteSetgroups([]byte("allow"), c); err != unix.EPERM {
		t.Errorf("setgroups allow after deny: %v, want EPERM", err)
	}
	if ns.SetgroupsAllowed() {
		t.Error("setgroups allowed after deny")
	}
	// A writer of another namespace (a sibling) may not write at all.
	other, _ := inNewUserNS(t)
	_, ns2 := inNewUserNS(t)
	if err := ns2.WriteMap(false, []byte("0 1000 1\n"), other, other); err != unix.EPERM {
		t.Errorf("a sibling's write: %v, want EPERM", err)
	}
	// Root of the first namespace, with CAP_SETUID there, may map any
	// range of it; a file opened by an unprivileged opener may not be
	// used for that by root.
	root := NewCredentials(0, 0, nil)
	_, ns3 := inNewUserNS(t)
	if err := ns3.WriteMap(false, []byte("0 0 65536\n"), NewCredentials(1000, 1000, nil), root); err != unix.EPERM {
		t.Errorf("root writing through an unprivileged opener's file: %v, want EPERM", err)
	}
	if err := ns3.WriteMap(false, []byte("0 0 65536\n"), root, root); err != nil {
		t.Errorf("root's map: %v", err)
	}
}

// TestNestedNamespaceGrantsNothingOverUnmappedFiles pins the rule that
// keeps a user namespace's capabilities inside it: over a file whose
// owner or group it does not map they count for nothing.
func TestNestedNamespaceGrantsNothingOverUnmappedFiles(t *testing.T) {
	c, ns := inNewUserNS(t)
	if err := ns.WriteMap(false, []byte("0 1000 1\n"), c, c); err != nil {
		t.Fatal(err)
	}
	v := vfs.Creds{FSUID: c.FSUID, FSGID: c.FSGID, Caps: c.CapEffective, UserNS: ns}
	rootFile := vfs.Stat{Mode: unix.S_IFREG | 0o600, UID: 0, GID: 0}
	if err := v.Permission(&rootFile, vfs.MayRead); err != unix.EACCES {
		t.Errorf("reading root's 0600 file: %v, want EACCES", err)
	}
	if v.CapableOver(&rootFile, unix.CAP_CHOWN) || v.CapableOver(&rootFile, unix.CAP_FOWNER) {
		t.Error("a capability over a file the namespace does not map")
	}
	if v.Capable(unix.CAP_MKNOD) || v.Capable(unix.CAP_SYS_ADMIN) {
		t.Error("a first-namespace capability from a nested one")
	}
	own := vfs.Stat{Mode: unix.S_IFREG | 0o000, UID: 1000, GID: 1000}
	// Its group not mapped yet, the file is not the namespace's.
	if err := (&vfs.Creds{FSUID: 1000, FSGID: 1000, Caps: c.CapEffective, UserNS: ns}).Permission(&own, vfs.MayRead); err != unix.EACCES {
		t.Errorf("CAP_DAC_OVERRIDE over a file of an unmapped group: %v, want EACCES", err)
	}
	if err := ns.WriteSetgroups([]byte("deny"), c); err != nil {
		t.Fatal(err)
	}
	if err := ns.WriteMap(true, []byte("0 1000 1"), c, c); err != nil {
		t.Fatal(err)
	}
	if err := (&vfs.Creds{FSUID: 1000, FSGID: 1000, Caps: c.CapEffective, UserNS: ns}).Permission(&own, vfs.MayRead); err != nil {
		t.Errorf("CAP_DAC_OVERRIDE over its own file: %v", err)
	}
}

// TestMappingKernelRootNeedsCAPSETFCAP pins verify_root_map: root of the
// first namespace without CAP_SETFCAP maps itself into its own new
// namespace alone by a map that leaves uid 0 out.
func TestMappingKernelRootNeedsCAPSETFCAP(t *testing.T) {
	c := NewCredentials(0, 0, nil)
	c.CapEffective, c.CapPermitted = 0, 0
	for _, setfcap := range []bool{false, true} {
		ns, err := c.userns.newChild(0, 0, setfcap)
		if err != nil {
			t.Fatal(err)
		}
		inside := c.Fork()
		inside.enterUserNamespace(ns)
		err = ns.WriteMap(false, []byte("0 0 1"), inside, inside)
		if want := map[bool]error{false: unix.EPERM, true: nil}[setfcap]; err != want {
			t.Errorf("creator with CAP_SETFCAP %v: uid_map of root: %v, want %v", setfcap, err, want)
		}
	}
}

func TestUserNamespaceDepth(t *testing.T) {
	ns := rootUserNS
	for i := 0; i <= maxUserNSLevel; i++ {
		child, err := ns.newChild(0, 0, true)
		if err != nil {
			t.Fatalf("level %d: %v", i+1, err)
		}
		child.uids, child.gids = idMap{{0, 0, 1}}, idMap{{0, 0, 1}}
		ns = child
	}
	if _, err := ns.newChild(0, 0, true); err != unix.ENOSPC {
		t.Errorf("level %d: %v, want ENOSPC", ns.level+1, err)
	}
}
