package e2b

import (
	"context"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestIDFilesParseDefensively(t *testing.T) {
	data := strings.Join([]string{
		"root:x:0:0:root:/root:/bin/bash",
		"# a comment:x:5:5",
		"+nis:x:6:6",
		"short:x:7",           // too few fields
		"neg:x:-1:0",          // no id
		"huge:x:4294967296:0", // past 32 bits
		":x:8:8",              // no name
		strings.Repeat("n", maxIDName+1) + ":x:9:9",
		"dup:x:0:0", // root's id again: the first line names it
		"daemon:x:1:1::/:",
		"last:x:10:10", // no newline at the end
	}, "\n")
	got := parseIDFile([]byte(data), false)
	want := map[uint32]string{0: "root", 1: "daemon", 10: "last"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
	if got := parseIDFile([]byte(data), true); got[10] != "" || got[1] != "daemon" {
		t.Errorf("cut off: the last line must be left out: %v", got)
	}
}

func TestIDFilesAreReadBounded(t *testing.T) {
	sb, f := newFakeSandbox(t)
	f.put("/etc", syscall.S_IFDIR|0o755, "")
	long := "u:x:1:1::/:\n" + strings.Repeat("filler:x:2:2::/:\n", 2*maxIDFile/17) + "late:x:3:3::/:\n"
	f.put("/etc/passwd", syscall.S_IFREG|0o644, long)
	names := sb.idNames(context.Background())
	if names.users[1] != "u" || names.users[3] != "" || len(names.groups) != 0 {
		t.Errorf("users %d names (1: %q, 3: %q), groups %v: want the first %d bytes' and no group file",
			len(names.users), names.users[1], names.users[3], names.groups, maxIDFile)
	}
}

func TestIDNamesAreReadAgainOnceStale(t *testing.T) {
	sb, f := newFakeSandbox(t)
	f.put("/etc", syscall.S_IFDIR|0o755, "")
	f.put("/etc/passwd", syscall.S_IFREG|0o644, "old:x:0:0::/:\n")
	ctx := context.Background()
	if got := sb.idNames(ctx).users[0]; got != "old" {
		t.Fatalf("first read: %q", got)
	}
	f.put("/etc/passwd", syscall.S_IFREG|0o644, "new:x:0:0::/:\n")
	reads := len(f.seen())
	if got := sb.idNames(ctx).users[0]; got != "old" || len(f.seen()) != reads {
		t.Errorf("within %v: %q after %d more calls, want the names kept and none", idNamesFresh, got, len(f.seen())-reads)
	}
	sb.names.read = time.Now().Add(-idNamesFresh)
	if got := sb.idNames(ctx).users[0]; got != "new" {
		t.Errorf("once stale: %q, want the file read again", got)
	}
}
