package kernel

import (
	"testing"

	"golang.org/x/sys/unix"
)

const (
	capChown = 1 << unix.CAP_CHOWN
	capKill  = 1 << unix.CAP_KILL
	capRaw   = 1 << unix.CAP_NET_RAW
)

func credsOf(uid, gid uint32, eff, prm, inh, bnd, amb uint64) *Credentials {
	c := NewCredentials(uid, gid, nil)
	c.CapEffective, c.CapPermitted, c.CapInheritable, c.CapBounding, c.CapAmbient = eff, prm, inh, bnd, amb
	return c
}

var plainFile = execProgram{Mode: unix.S_IFREG | 0o755}

func TestRootsExecHoldsItsBoundingSetJoinedWithItsInheritableOneEffective(t *testing.T) {
	c := credsOf(0, 0, 0, capChown, capRaw, capChown|capKill, 0)
	n, secure := c.forExec(plainFile, execUnsafe{})
	if want := uint64(capChown | capKill | capRaw); n.CapPermitted != want || n.CapEffective != want {
		t.Errorf("root's exec: permitted %#x effective %#x, want both %#x", n.CapPermitted, n.CapEffective, want)
	}
	if secure {
		t.Error("root's plain exec is AT_SECURE, want not")
	}
}

func TestANonRootExecKeepsOnlyItsAmbientCapabilities(t *testing.T) {
	c := credsOf(1000, 1000, capChown|capKill, capChown|capKill, capKill, AllCaps, capKill)
	n, secure := c.forExec(plainFile, execUnsafe{})
	if n.CapPermitted != capKill || n.CapEffective != capKill || n.CapAmbient != capKill || n.CapInheritable != capKill {
		t.Errorf("uid 1000's exec: permitted %#x effective %#x ambient %#x inheritable %#x, want %#x each",
			n.CapPermitted, n.CapEffective, n.CapAmbient, n.CapInheritable, capKill)
	}
	if secure {
		t.Error("an exec keeping ambient capabilities is AT_SECURE, want not")
	}
	n, _ = credsOf(1000, 1000, capChown, capChown, 0, AllCaps, 0).forExec(plainFile, execUnsafe{})
	if n.CapPermitted != 0 || n.CapEffective != 0 {
		t.Errorf("uid 1000 holding CAP_CHOWN without ambient: after exec permitted %#x effective %#x, want none",
			n.CapPermitted, n.CapEffective)
	}
}

func TestASetUserIDRootProgramRunsAsRootWithItsBoundingSetAndDropsAmbient(t *testing.T) {
	c := credsOf(1000, 1000, capKill, capKill, capKill, capChown|capKill, capKill)
	n, secure := c.forExec(execProgram{Mode: unix.S_IFREG | unix.S_ISUID | 0o755, UID: 0, GID: 0}, execUnsafe{})
	if n.UID != 1000 || n.EUID != 0 || n.SUID != 0 || n.FSUID != 0 {
		t.Errorf("uids after a set-user-ID-root exec: %d %d %d %d, want 1000 0 0 0", n.UID, n.EUID, n.SUID, n.FSUID)
	}
	if n.CapAmbient != 0 || n.CapPermitted != capChown|capKill || n.CapEffective != capChown|capKill {
		t.Errorf("caps: ambient %#x permitted %#x effective %#x, want none, %#x, %#x",
			n.CapAmbient, n.CapPermitted, n.CapEffective, capChown|capKill, capChown|capKill)
	}
	if !secure {
		t.Error("a set-user-ID exec is not AT_SECURE")
	}
}

func TestASetGroupIDBitCountsOnlyWithGroupExecute(t *testing.T) {
	c := credsOf(1000, 1000, 0, 0, 0, AllCaps, 0)
	n, _ := c.forExec(execProgram{Mode: unix.S_IFREG | unix.S_ISGID | 0o755, GID: 50}, execUnsafe{})
	if n.EGID != 50 || n.SGID != 50 || n.GID != 1000 {
		t.Errorf("gids after a set-group-ID exec: %d %d %d, want real 1000, effective and saved 50", n.GID, n.EGID, n.SGID)
	}
	// Without group execute the bit marks mandatory locking, not set-group-ID.
	n, _ = c.forExec(execProgram{Mode: unix.S_IFREG | unix.S_ISGID | 0o705, GID: 50}, execUnsafe{})
	if n.EGID != 1000 {
		t.Errorf("effective gid after S_ISGID without S_IXGRP: %d, want 1000", n.EGID)
	}
}

func TestSetIDBitsOnANosuidMountAreIgnored(t *testing.T) {
	c := credsOf(1000, 1000, 0, 0, 0, AllCaps, 0)
	n, secure := c.forExec(execProgram{Mode: unix.S_IFREG | unix.S_ISUID | unix.S_ISGID | 0o755, NoSUID: true}, execUnsafe{})
	if n.EUID != 1000 || n.EGID != 1000 || n.CapPermitted != 0 || secure {
		t.Errorf("nosuid exec: euid %d egid %d permitted %#x secure %v, want 1000 1000 0 false", n.EUID, n.EGID, n.CapPermitted, secure)
	}
}

func TestNoNewPrivsRefusesTheGainOfASetUserIDExec(t *testing.T) {
	c := credsOf(1000, 1000, 0, 0, 0, AllCaps, 0)
	suid := execProgram{Mode: unix.S_IFREG | unix.S_ISUID | 0o755}
	n, _ := c.forExec(suid, execUnsafe{NoNewPrivs: true})
	if n.EUID != 1000 || n.SUID != 1000 || n.CapPermitted != 0 || n.CapEffective != 0 {
		t.Errorf("set-user-ID-root exec under no_new_privs: euid %d suid %d permitted %#x effective %#x, want 1000 1000 0 0",
			n.EUID, n.SUID, n.CapPermitted, n.CapEffective)
	}
}

func TestATracerWithoutCapSysPtraceCapsTheGainButCapSetuidKeepsTheIDs(t *testing.T) {
	suid := execProgram{Mode: unix.S_IFREG | unix.S_ISUID | 0o755}
	n, _ := credsOf(1000, 1000, 0, 0, 0, AllCaps, 0).forExec(suid, execUnsafe{UncapableTracer: true})
	if n.EUID != 1000 || n.CapPermitted != 0 {
		t.Errorf("traced set-user-ID exec: euid %d permitted %#x, want 1000 and none", n.EUID, n.CapPermitted)
	}
	setuid := uint64(1) << unix.CAP_SETUID
	n, _ = credsOf(1000, 1000, setuid, setuid, 0, AllCaps, 0).forExec(suid, execUnsafe{UncapableTracer: true})
	if n.EUID != 0 || n.CapPermitted != setuid {
		t.Errorf("traced set-user-ID exec by a holder of CAP_SETUID: euid %d permitted %#x, want 0 and only %#x",
			n.EUID, n.CapPermitted, setuid)
	}
}

func TestRootRunningASetUserIDProgramOfAnotherUserKeepsPermittedButNotEffective(t *testing.T) {
	c := credsOf(0, 0, AllCaps, AllCaps, 0, AllCaps, 0)
	n, secure := c.forExec(execProgram{Mode: unix.S_IFREG | unix.S_ISUID | 0o755, UID: 1000}, execUnsafe{})
	if n.EUID != 1000 || n.CapPermitted != AllCaps || n.CapEffective != 0 || !secure {
		t.Errorf("root's exec of a uid 1000 set-user-ID program: euid %d permitted %#x effective %#x secure %v, want 1000, all, none, true",
			n.EUID, n.CapPermitted, n.CapEffective, secure)
	}
}
