package bundle

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func withMounts(mounts string) string {
	return `{
	"ociVersion": "1.0.2-dev",
	"process": {"args": ["sh"], "cwd": "/"},
	"root": {"path": "rootfs"},
	"mounts": ` + mounts + `
}`
}

func TestBindMountsAreListedInOrder(t *testing.T) {
	dir := writeBundle(t, withMounts(`[
		{"destination": "/proc", "type": "proc", "source": "proc"},
		{"destination": "/data", "type": "bind", "source": "data", "options": ["rbind", "ro"]},
		{"destination": "/etc/hosts", "type": "none", "source": "hosts", "options": ["bind", "ro", "rw"]}
	]`))
	if err := os.Mkdir(filepath.Join(dir, "data"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "hosts"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	b, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := []BindMount{
		{Index: 1, Source: filepath.Join(dir, "data"), Dest: "/data", ReadOnly: true, Dir: true},
		{Index: 2, Source: filepath.Join(dir, "hosts"), Dest: "/etc/hosts", ReadOnly: false, Dir: false},
	}
	if len(b.Binds) != len(want) {
		t.Fatalf("binds %+v, want %+v", b.Binds, want)
	}
	for i := range want {
		if b.Binds[i] != want[i] {
			t.Errorf("bind %d: %+v, want %+v", i, b.Binds[i], want[i])
		}
	}
}

func TestBindMountErrorsNameTheMount(t *testing.T) {
	for _, c := range []struct{ mounts, field, want string }{
		{`[{"destination": "/x", "type": "bind", "source": "missing"}]`, "mounts[0].source", `"missing": not found`},
		{`[{"destination": "x", "type": "bind", "source": "/"}]`, "mounts[0].destination", "not an absolute path"},
		{`[{"destination": "/tmp", "type": "tmpfs"}, {"destination": "/y", "options": ["bind"]}]`, "mounts[1].source", "missing"},
	} {
		expectError(t, writeBundle(t, withMounts(c.mounts)), c.field, c.want)
	}
}

func TestRootfsWritesAnnotation(t *testing.T) {
	for _, c := range []struct {
		annotations string
		want        string
	}{
		{`{}`, WritesOverlay},
		{`{"dev.moat.rootfs-writes": "host"}`, WritesHost},
		{`{"dev.moat.rootfs-writes": "overlay"}`, WritesOverlay},
	} {
		dir := writeBundle(t, `{"ociVersion": "1.0.2", "process": {"args": ["sh"], "cwd": "/"},
			"root": {"path": "rootfs"}, "annotations": `+c.annotations+`}`)
		b, err := Load(dir)
		if err != nil {
			t.Fatal(err)
		}
		if got, err := b.RootfsWrites(WritesOverlay); err != nil || got != c.want {
			t.Errorf("%s: %q, %v, want %q", c.annotations, got, err, c.want)
		}
	}
	dir := writeBundle(t, `{"ociVersion": "1.0.2", "process": {"args": ["sh"], "cwd": "/"},
		"root": {"path": "rootfs"}, "annotations": {"dev.moat.rootfs-writes": "disk"}}`)
	b, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.RootfsWrites(WritesOverlay); err == nil || !strings.Contains(err.Error(), `annotations["dev.moat.rootfs-writes"]`) || !strings.Contains(err.Error(), `"disk"`) {
		t.Errorf("bad annotation: %v", err)
	}
}

func TestOverlayMemoryAnnotation(t *testing.T) {
	for _, c := range []struct {
		annotations string
		want        int64
		bad         bool
	}{
		{`{}`, DefaultOverlayMemory, false},
		{`{"dev.moat.overlay-memory": "1048576"}`, 1 << 20, false},
		{`{"dev.moat.overlay-memory": "64k"}`, 64 << 10, false},
		{`{"dev.moat.overlay-memory": "8M"}`, 8 << 20, false},
		{`{"dev.moat.overlay-memory": "2g"}`, 2 << 30, false},
		{`{"dev.moat.overlay-memory": "0"}`, 0, true},
		{`{"dev.moat.overlay-memory": "-5m"}`, 0, true},
		{`{"dev.moat.overlay-memory": "lots"}`, 0, true},
		{`{"dev.moat.overlay-memory": "99999999999g"}`, 0, true},
	} {
		dir := writeBundle(t, `{"ociVersion": "1.0.2", "process": {"args": ["sh"], "cwd": "/"},
			"root": {"path": "rootfs"}, "annotations": `+c.annotations+`}`)
		b, err := Load(dir)
		if err != nil {
			t.Fatal(err)
		}
		got, err := b.OverlayMemory()
		if c.bad {
			if err == nil || !strings.Contains(err.Error(), `annotations["dev.moat.overlay-memory"]`) {
				t.Errorf("%s: %d, %v, want an error naming the annotation", c.annotations, got, err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("%s: %d, %v, want %d", c.annotations, got, err, c.want)
		}
	}
}
