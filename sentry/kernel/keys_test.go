package kernel

import (
	"testing"

	"golang.org/x/sys/unix"
)

// TestKeyringSearchGoesDepthFirstAndSkipsRevoked builds a keyring holding
// a key and a keyring with another, revokes one, and checks what a search
// finds, and the type and description checks of add_key.
func TestKeyringSearchGoesDepthFirstAndSkipsRevoked(t *testing.T) {
	var kt keyTable
	kt.serial = map[int32]*Key{}
	top := kt.newKeyLocked(keyringType, "top", nil, 0, 0, 0)
	inner := kt.newKeyLocked(keyringType, "inner", nil, 0, 0, 0)
	a := kt.newKeyLocked("user", "a", []byte("1"), 0, 0, 0)
	b := kt.newKeyLocked("user", "b", []byte("2"), 0, 0, 0)
	top.Link(a)
	top.Link(inner)
	inner.Link(b)
	inner.Link(inner) // a cycle: the depth limit ends it
	if k, err := top.Search("user", "b"); err != nil || k != b {
		t.Errorf("search for b: %v, %v; want b", k, err)
	}
	if _, err := top.Search("user", "c"); err != unix.ENOKEY {
		t.Errorf("search for a missing key: %v, want ENOKEY", err)
	}
	a.Revoke()
	if _, err := top.Search("user", "a"); err != unix.ENOKEY {
		t.Errorf("search for a revoked key: %v, want ENOKEY", err)
	}
	if err := top.Unlink(b); err != unix.ENOENT {
		t.Errorf("unlink of a key the keyring does not hold itself: %v, want ENOENT", err)
	}
	for _, c := range []struct {
		typ, desc string
		want      error
	}{
		{"user", "x", nil}, {"logon", "svc:x", nil}, {"logon", ":x", unix.EINVAL}, {"logon", "x", unix.EINVAL},
		{"user", "", unix.EINVAL}, {".user", "x", unix.EPERM}, {"big_key", "x", unix.ENODEV},
	} {
		if err := checkKeyType(c.typ, c.desc); err != c.want {
			t.Errorf("checkKeyType(%q, %q) = %v, want %v", c.typ, c.desc, err, c.want)
		}
	}
}
