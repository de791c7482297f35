package cgroups

import (
	"reflect"
	"strings"
	"testing"

	"github.com/moat-sandbox/moat/internal/mountinfo"
)

// A hybrid host's mountinfo, with cpu and cpuacct mounted together, a
// bind mount of one hierarchy and a mount whose root is a cgroup below
// the hierarchy's (as inside a container).
const hybridMountinfo = `22 1 0:20 / /sys rw - sysfs sysfs rw
30 22 0:26 / /sys/fs/cgroup ro,nosuid - tmpfs tmpfs ro,mode=755
31 30 0:27 / /sys/fs/cgroup/unified rw - cgroup2 cgroup2 rw,nsdelegate
32 30 0:28 / /sys/fs/cgroup/systemd rw - cgroup cgroup rw,xattr,name=systemd
33 30 0:29 / /sys/fs/cgroup/cpu,cpuacct rw - cgroup cgroup rw,cpu,cpuacct
34 30 0:30 /outer /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory
35 30 0:30 /outer /sys/fs/cgroup/memory2 rw - cgroup cgroup rw,memory
36 1 0:31 / /elsewhere rw - cgroup cgroup rw,pids
`

func TestReadHierarchiesListsEachMountedHierarchyOnce(t *testing.T) {
	v1, v2 := readHierarchies(mountinfo.Parse(hybridMountinfo), "/sys/fs/cgroup")
	want := []hierarchy{
		{"/sys/fs/cgroup/systemd", "/", []string{"name=systemd"}},
		{"/sys/fs/cgroup/cpu,cpuacct", "/", []string{"cpu", "cpuacct"}},
		{"/sys/fs/cgroup/memory", "/outer", []string{"memory"}},
	}
	if !reflect.DeepEqual(v1, want) {
		t.Errorf("v1 hierarchies %+v, want %+v", v1, want)
	}
	if v2 == nil || v2.mountpoint != "/sys/fs/cgroup/unified" {
		t.Errorf("v2 hierarchy %+v, want the one at /sys/fs/cgroup/unified", v2)
	}
}

func TestDirInTakesRelativePathsFromTheCallersCgroup(t *testing.T) {
	top := hierarchy{mountpoint: "/sys/fs/cgroup/memory", root: "/"}
	nested := hierarchy{mountpoint: "/sys/fs/cgroup/memory", root: "/outer"}
	for _, c := range []struct {
		h          hierarchy
		inner, own string
		want       string
	}{
		{top, "/x/c1", "/me", "/sys/fs/cgroup/memory/x/c1"},
		{top, "c1", "/me", "/sys/fs/cgroup/memory/me/c1"},
		{top, "c1", "/", "/sys/fs/cgroup/memory/c1"},
		{nested, "c1", "/outer/me", "/sys/fs/cgroup/memory/me/c1"},
		{nested, "/outer/c1", "/outer/me", "/sys/fs/cgroup/memory/c1"},
	} {
		if got := dirIn(c.h, c.inner, c.own); got != c.want {
			t.Errorf("dirIn(root %s, %q, own %q) = %s, want %s", c.h.root, c.inner, c.own, got, c.want)
		}
	}
}

func TestOwnCgroupsKeysEachHierarchyByItsControllers(t *testing.T) {
	own, err := ownCgroups(strings.NewReader("12:cpu,cpuacct:/a\n4:memory:/p/q\n1:name=systemd:/s\n0::/u\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"cpu,cpuacct": "/a", "memory": "/p/q", "name=systemd": "/s", "": "/u"}
	if !reflect.DeepEqual(own, want) {
		t.Errorf("ownCgroups = %v, want %v", own, want)
	}
}
