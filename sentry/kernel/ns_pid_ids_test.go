package kernel

import (
	"testing"

	"golang.org/x/sys/unix"
)

// A namespace's ids are its own, counted from 1, and each maps to the
// root id both ways; an id outside a namespace reads 0 there.
func TestPIDNamespaceIDsMapToRootIDsBothWays(t *testing.T) {
	k := &Kernel{rootPIDNS: newRootPIDNamespace(), tasks: map[int32]*Task{}, tgs: map[int32]*ThreadGroup{}}
	child, err := k.rootPIDNS.newChild()
	if err != nil {
		t.Fatal(err)
	}
	grandchild, err := child.newChild()
	if err != nil {
		t.Fatal(err)
	}
	k.treeMu.Lock()
	a, errA := k.enterLocked(child, 40)      // a process of child
	b, errB := k.enterLocked(grandchild, 41) // one of grandchild, so of child too
	k.treeMu.Unlock()
	if errA != nil || errB != nil || a != 1 || b != 1 {
		t.Fatalf("first ids = %d (%v), %d (%v); want 1 and 1", a, errA, b, errB)
	}
	for _, c := range []struct {
		ns         *PIDNamespace
		root, want int32
	}{{k.rootPIDNS, 41, 41}, {child, 40, 1}, {child, 41, 2}, {grandchild, 41, 1}, {grandchild, 40, 0}} {
		if got := c.ns.idOf(c.root); got != c.want {
			t.Errorf("level %d: id of root %d = %d, want %d", c.ns.level, c.root, got, c.want)
		}
		if c.want != 0 {
			if got := c.ns.rootOf(c.want); got != c.root {
				t.Errorf("level %d: root of %d = %d, want %d", c.ns.level, c.want, got, c.root)
			}
		}
	}
	if got := k.IDsIn(child, grandchild, 41); len(got) != 2 || got[0] != 2 || got[1] != 1 {
		t.Errorf("NSpid of root 41 from child = %v, want [2 1]", got)
	}
	if got := k.IDsIn(grandchild, child, 40); got != nil {
		t.Errorf("NSpid from a namespace nested below the process's = %v, want none", got)
	}
	// Released, an id is gone from every level, and its number is free.
	k.treeMu.Lock()
	k.releaseIDLocked(grandchild, 41)
	k.treeMu.Unlock()
	if child.idOf(41) != 0 || grandchild.idOf(41) != 0 || grandchild.rootOf(1) != 0 {
		t.Errorf("root 41 still mapped after its release")
	}
}

// Namespaces nest 32 deep below the root, as MAX_PID_NS_LEVEL allows;
// the next is ENOSPC.
func TestPIDNamespacesNestThirtyTwoLevels(t *testing.T) {
	ns := newRootPIDNamespace()
	for i := 1; i <= maxPIDNSLevel; i++ {
		next, err := ns.newChild()
		if err != nil {
			t.Fatalf("level %d: %v", i, err)
		}
		ns = next
	}
	if _, err := ns.newChild(); err != unix.ENOSPC {
		t.Errorf("level %d: %v, want ENOSPC", maxPIDNSLevel+1, err)
	}
}

// A namespace whose init has ended takes no process: ENOMEM, and nothing
// of the refused id is left in it or its ancestors.
func TestAClosedPIDNamespaceRefusesNewIDs(t *testing.T) {
	k := &Kernel{rootPIDNS: newRootPIDNamespace()}
	child, _ := k.rootPIDNS.newChild()
	grandchild, _ := child.newChild()
	child.closed = true
	k.treeMu.Lock()
	_, err := k.enterLocked(grandchild, 50)
	k.treeMu.Unlock()
	if err != unix.ENOMEM {
		t.Errorf("enter below a closed namespace: %v, want ENOMEM", err)
	}
	if grandchild.idOf(50) != 0 || child.idOf(50) != 0 {
		t.Errorf("a refused id is left mapped")
	}
}
