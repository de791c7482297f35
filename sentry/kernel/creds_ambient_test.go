package kernel

import (
	"testing"

	"golang.org/x/sys/unix"
)

func TestAnAmbientCapabilityIsRaisedOnlyWhenPermittedAndInheritable(t *testing.T) {
	c := NewCredentials(0, 0, nil)
	if _, err := c.AmbientCap(unix.PR_CAP_AMBIENT_RAISE, unix.CAP_KILL); err != unix.EPERM {
		t.Errorf("raise without CAP_KILL inheritable = %v, want EPERM", err)
	}
	if err := c.SetCaps(c.CapEffective, c.CapPermitted, capBit(unix.CAP_KILL)); err != nil {
		t.Fatal(err)
	}
	if _, err := c.AmbientCap(unix.PR_CAP_AMBIENT_RAISE, unix.CAP_KILL); err != nil {
		t.Errorf("raise of a permitted and inheritable capability: %v", err)
	}
	if set, _ := c.AmbientCap(unix.PR_CAP_AMBIENT_IS_SET, unix.CAP_KILL); set != 1 {
		t.Errorf("IS_SET after the raise = %d, want 1", set)
	}
	if _, err := c.AmbientCap(unix.PR_CAP_AMBIENT_LOWER, unix.CAP_KILL); err != nil || c.CapAmbient != 0 {
		t.Errorf("lower: %v, ambient %#x, want none", err, c.CapAmbient)
	}
}

func TestAmbientCapabilityArgumentsOutOfRangeAreInvalid(t *testing.T) {
	c := NewCredentials(0, 0, nil)
	for _, try := range []struct{ op, capability uint64 }{
		{unix.PR_CAP_AMBIENT_IS_SET, unix.CAP_LAST_CAP + 1},
		{unix.PR_CAP_AMBIENT_CLEAR_ALL, 1},
		{9, unix.CAP_KILL},
	} {
		if _, err := c.AmbientCap(try.op, try.capability); err != unix.EINVAL {
			t.Errorf("PR_CAP_AMBIENT op %d capability %d = %v, want EINVAL", try.op, try.capability, err)
		}
	}
}

func TestCapsetDropsAmbientCapabilitiesLeavingThePermittedOrInheritableSet(t *testing.T) {
	c := NewCredentials(0, 0, nil)
	both := capBit(unix.CAP_KILL) | capBit(unix.CAP_CHOWN)
	c.SetCaps(c.CapEffective, c.CapPermitted, both)
	c.AmbientCap(unix.PR_CAP_AMBIENT_RAISE, unix.CAP_KILL)
	c.AmbientCap(unix.PR_CAP_AMBIENT_RAISE, unix.CAP_CHOWN)
	if err := c.SetCaps(c.CapEffective, c.CapPermitted, capBit(unix.CAP_CHOWN)); err != nil {
		t.Fatal(err)
	}
	if c.CapAmbient != capBit(unix.CAP_CHOWN) {
		t.Errorf("ambient %#x after CAP_KILL left the inheritable set, want CAP_CHOWN alone", c.CapAmbient)
	}
	if err := c.SetCaps(0, c.CapPermitted&^capBit(unix.CAP_CHOWN), capBit(unix.CAP_CHOWN)); err != nil {
		t.Fatal(err)
	}
	if c.CapAmbient != 0 {
		t.Errorf("ambient %#x after CAP_CHOWN left the permitted set, want none", c.CapAmbient)
	}
}

func TestLeavingRootClearsAmbientCapabilitiesEvenWithKeepCaps(t *testing.T) {
	c := NewCredentials(0, 0, nil)
	c.SetCaps(c.CapEffective, c.CapPermitted, capBit(unix.CAP_CHOWN))
	c.AmbientCap(unix.PR_CAP_AMBIENT_RAISE, unix.CAP_CHOWN)
	c.SetKeepCaps(true)
	if err := c.SetUIDs(1000, 1000, 1000); err != nil {
		t.Fatal(err)
	}
	if c.CapAmbient != 0 {
		t.Errorf("ambient %#x after setresuid(1000, 1000, 1000), want none", c.CapAmbient)
	}
	if c.CapPermitted == 0 {
		t.Error("keepcaps kept no permitted capability")
	}
}

func TestForkKeepsAmbientCapabilities(t *testing.T) {
	c := NewCredentials(0, 0, nil)
	c.SetCaps(c.CapEffective, c.CapPermitted, capBit(unix.CAP_CHOWN))
	c.AmbientCap(unix.PR_CAP_AMBIENT_RAISE, unix.CAP_CHOWN)
	if got := c.Fork().CapAmbient; got != capBit(unix.CAP_CHOWN) {
		t.Errorf("the child's ambient set is %#x, want CAP_CHOWN", got)
	}
}
