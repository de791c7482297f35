package kvm

import (
	"os"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// These tests need no KVM: they are about hosts where it cannot be used.

// openFDs counts the test process's open descriptors.
func openFDs(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(ents)
}

// checkUnusable asserts that starting the platform on device fails with one
// line that names the cause and the fall-back, and keeps no descriptor.
func checkUnusable(t *testing.T, device, cause string) {
	t.Helper()
	fd, err := unix.MemfdCreate("test-mem", unix.MFD_CLOEXEC)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	before := openFDs(t)
	p, err := newOn(device, fd)
	if err == nil {
		t.Fatalf("the platform started on %s", device)
	}
	if p != nil {
		t.Errorf("a failed start returned a platform")
	}
	msg := err.Error()
	if strings.Contains(msg, "\n") || !strings.Contains(msg, cause) || !strings.HasSuffix(msg, "use --platform=systrap, which needs no KVM") {
		t.Errorf("error %q: want one line naming %q and ending with the fall-back to systrap", msg, cause)
	}
	if strings.Count(msg, "--platform") != 1 {
		t.Errorf("error %q suggests the fall-back more than once", msg)
	}
	if after := openFDs(t); after != before {
		t.Errorf("%d descriptors open after the failed start, %d before", after, before)
	}
}

func TestMissingDeviceIsOneLineSuggestingSystrap(t *testing.T) {
	checkUnusable(t, "/nonexistent/kvm", "open /nonexistent/kvm: no such file or directory")
}

func TestDeviceThatIsNotKVMIsOneLineSuggestingSystrap(t *testing.T) {
	checkUnusable(t, "/dev/null", "/dev/null is not a KVM device")
}
