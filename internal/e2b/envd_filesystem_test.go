package e2b

import (
	"testing"
	"time"
)

func TestFindFieldsBecomeEnvdsEntryInfo(t *testing.T) {
	e := parseEntry([]string{"d", "4096", "755", "root", "staff", "1700000000.5", "/tmp/dir", ""})
	if e.Type != fileTypeDirectory || e.Name != "dir" || e.Path != "/tmp/dir" || e.Size != "4096" ||
		e.Mode != 0o755 || e.Permissions != "drwxr-xr-x" || e.Owner != "root" || e.Group != "staff" ||
		e.SymlinkTarget != nil || e.ModifiedTime == nil || !e.ModifiedTime.Equal(time.Unix(1700000000, 5e8)) {
		t.Errorf("directory: %+v", e)
	}
	l := parseEntry([]string{"l", "7", "777", "1000", "1000", "1700000000.0000000000", "/a/link", "../target"})
	if l.Type != fileTypeSymlink || l.SymlinkTarget == nil || *l.SymlinkTarget != "../target" || l.Permissions != "Lrwxrwxrwx" {
		t.Errorf("symlink: %+v", l)
	}
	f := parseEntry([]string{"f", "14", "4644", "root", "root", "1", "/x", ""})
	if f.Type != fileTypeFile || f.Mode != 0o644 || f.Permissions != "-rw-r--r--" {
		t.Errorf("file (set-uid bit beyond the permissions): %+v", f)
	}
}

func TestRelativePathsAreTheUsersHomes(t *testing.T) {
	u := guestUser{name: "user", home: "/home/user"}
	for in, want := range map[string]string{
		"a/b": "/home/user/a/b", "~": "/home/user", "~/x": "/home/user/x",
		"/etc/../tmp": "/tmp", "../../..": "/",
	} {
		if got := u.resolve(in); got != want {
			t.Errorf("%q: got %q, want %q", in, got, want)
		}
	}
}
