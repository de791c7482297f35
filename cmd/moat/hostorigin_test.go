package main

import (
	"testing"

	"github.com/moat-sandbox/moat/internal/mountinfo"
)

const sampleMountinfo = `21 1 254:0 / / rw,relatime shared:1 - ext4 /dev/vda rw
22 21 0:5 / /dev rw,nosuid shared:2 - devtmpfs udev rw
30 21 0:27 / /tmp rw,nosuid,nodev shared:12 - tmpfs tmpfs rw
31 30 254:0 /srv/data /tmp/bound rw,relatime shared:1 - ext4 /dev/vda rw
32 21 0:28 / /mnt/with\040space rw - tmpfs my\040tmpfs rw
33 30 0:29 / /tmp rw - tmpfs second rw
`

func TestOriginIsThePathWithinTheTopmostMountHoldingIt(t *testing.T) {
	for _, c := range []struct{ path, root, source string }{
		{"/etc", "/etc", "/dev/vda"},
		{"/", "/", "/dev/vda"},
		{"/tmp/x/y", "/x/y", "second"}, // the later mount on /tmp is on top
		{"/tmp/bound/f", "/srv/data/f", "/dev/vda"},
		{"/tmp/bound", "/srv/data", "/dev/vda"},
		{"/tmpfoo", "/tmpfoo", "/dev/vda"},
		{"/mnt/with space/a", "/a", "my tmpfs"},
	} {
		root, source := originIn(mountinfo.Parse(sampleMountinfo), c.path)
		if root != c.root || source != c.source {
			t.Errorf("origin of %s: %s on %s, want %s on %s", c.path, root, source, c.root, c.source)
		}
	}
}

func TestOriginWithoutAMountIsThePathItself(t *testing.T) {
	if root, source := originIn(nil, "/a/b"); root != "/a/b" || source != "/a/b" {
		t.Errorf("origin %s on %s", root, source)
	}
}
