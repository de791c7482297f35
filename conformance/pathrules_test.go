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

func TestCapabilitiesLinesGoIntoTheProgramsConfig(t *testing.T) {
	p, err := parseProgram("proc_caps.c", []byte("// covers: execve\n// capabilities: CAP_CHOWN  CAP_KILL\n"))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(p.Capabilities, []string{"CAP_CHOWN", "CAP_KILL"}) {
		t.Errorf("capabilities %q, want CAP_CHOWN CAP_KILL", p.Capabilities)
	}
	if _, err := parseProgram("proc_caps.c", []byte("// covers: execve\n// capabilities: chown\n")); err == nil {
		t.Error("a capability not named CAP_<NAME> was taken")
	}
}
