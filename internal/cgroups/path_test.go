package cgroups

import (
	"strings"
	"testing"
)

func TestInnerFollowsRuncsDriversForEachPathSyntax(t *testing.T) {
	for _, c := range []struct {
		path    string
		systemd bool
		want    string
	}{
		{"", false, "c1"}, // runc's default: the id, under the caller's cgroup
		{"/libpod_parent/libpod-c1", false, "/libpod_parent/libpod-c1"},
		{"/a/../b//c/", false, "/b/c"},
		{"rel/x", false, "rel/x"},
		{"../../escape", false, "escape"}, // a relative path never climbs above the caller's cgroup
		{"", true, "/system.slice/moat-c1.scope"},
		{"machine.slice:libpod:abc", true, "/machine.slice/libpod-abc.scope"},
		{"a-b-c.slice:docker:x", true, "/a.slice/a-b.slice/a-b-c.slice/docker-x.scope"},
		{"-.slice:p:x", true, "/p-x.scope"},
		{":p:x", true, "/system.slice/p-x.scope"},
		{"user.slice::x", true, "/user.slice/x.scope"},
		{"system.slice:p:sub.slice", true, "/system.slice/sub.slice"},
	} {
		got, err := Inner(c.path, c.systemd, "c1")
		if err != nil || got != c.want {
			t.Errorf("Inner(%q, systemd %v) = %q, %v; want %q", c.path, c.systemd, got, err, c.want)
		}
	}
}

func TestInnerRefusesAnUnknownSyntaxNamingTheField(t *testing.T) {
	for _, c := range []struct {
		path    string
		systemd bool
		want    string
	}{
		{"machine.slice:libpod:abc", false, "needs --systemd-cgroup"},
		{"/", false, "the hierarchy's root"},
		{"/a/b", true, "want slice:prefix:name"},
		{"a:b", true, "want slice:prefix:name"},
		{"a:b:c:d", true, "want slice:prefix:name"},
		{"machine:libpod:abc", true, "not a systemd slice name"},
		{"a--b.slice:p:x", true, "empty part between dashes"},
		{"machine.slice:p:", true, "the name must not be empty"},
		{"machine.slice:p:a/b", true, "no '/'"},
	} {
		_, err := Inner(c.path, c.systemd, "c1")
		if err == nil || !IsFieldError(err) || !strings.HasPrefix(err.Error(), "linux.cgroupsPath: ") || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Inner(%q, systemd %v): error %v, want linux.cgroupsPath: ... %s", c.path, c.systemd, err, c.want)
		}
		if err != nil && strings.Contains(err.Error(), "\n") {
			t.Errorf("Inner(%q): error %q is more than one line", c.path, err)
		}
	}
}
