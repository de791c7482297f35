package conformance

import (
	"slices"
	"testing"
)

func TestMaskedAndReadonlyPathLinesGoIntoTheProgramsConfig(t *testing.T) {
	src := "/* x */\n// covers: openat\n// masked-paths: /proc/kcore  /a\n// readonly-paths: /proc/sys\n// masked-paths: /b\n"
	p, err := parseProgram("fs_rules.c", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(p.MaskedPaths, []string{"/proc/kcore", "/a", "/b"}) || !slices.Equal(p.ReadonlyPaths, []string{"/proc/sys"}) {
		t.Errorf("masked %q, read-only %q", p.MaskedPaths, p.ReadonlyPaths)
	}
	plain, err := parseProgram("fs_plain.c", []byte("// covers: openat\n"))
	if err != nil || plain.MaskedPaths != nil || plain.ReadonlyPaths != nil {
		t.Errorf("a program without the lines: %+v, %v", plain, err)
	}
}
