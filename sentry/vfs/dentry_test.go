package vfs

import (
	"fmt"
	"testing"

	"golang.org/x/sys/unix"
)

// TestAbsentNamesBounded: a guest that probes ever new missing names does
// not grow its directory's memory of them past maxAbsent.
func TestAbsentNamesBounded(t *testing.T) {
	d := NewRoot(emptyDir{})
	for i := 0; i < 3*maxAbsent; i++ {
		if _, err := d.child(fmt.Sprintf("missing-%d", i)); err != unix.ENOENT {
			t.Fatalf("look-up %d: %v, want ENOENT", i, err)
		}
		if len(d.absent) > maxAbsent {
			t.Fatalf("%d absent names remembered, at most %d wanted", len(d.absent), maxAbsent)
		}
	}
	if len(d.absent) == 0 {
		t.Fatal("no absent name remembered")
	}
}
