package bench

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestDefaultRuntimes(t *testing.T) {
	rts, err := DefaultRuntimes()
	if err != nil {
		t.Fatal(err)
	}
	names := runtimeNames(rts)
	for _, want := range []string{"native", "runc", "runsc-2022", "runsc", "moat"} {
		if !strings.Contains(" "+strings.Join(names, " ")+" ", " "+want+" ") {
			t.Errorf("runtimes.json lacks %s; has %v", want, names)
		}
	}
}

func TestParseRuntimesRejects(t *testing.T) {
	for _, bad := range []string{
		`[{"name": "a", "kind": "oci", "binary": "x"}, {"name": "a", "kind": "oci", "binary": "y"}]`,
		`[{"name": "a", "kind": "vm", "binary": "x"}]`,
		`[{"name": "a", "kind": "oci"}]`,
		`[{"kind": "native"}]`,
		`[{"name": "a", "kind": "native", "platform": "kvm"}]`,
	} {
		if _, err := ParseRuntimes([]byte(bad)); err == nil {
			t.Errorf("ParseRuntimes(%s) accepted it", bad)
		}
	}
}

func TestSelectRuntimes(t *testing.T) {
	all := []Runtime{{Name: "runc"}, {Name: "moat-kvm", Skip: "not yet"}, {Name: "native"}}
	got, err := SelectRuntimes(all, nil)
	if err != nil || len(got) != 3 || got[1].Skip == "" {
		t.Errorf("SelectRuntimes(all, nil) = %v, %v; want all three, moat-kvm still skipped", got, err)
	}
	got, err = SelectRuntimes(all, []string{"native", "moat-kvm"})
	if err != nil || len(got) != 2 || got[0].Name != "native" || got[1].Skip != "" {
		t.Errorf("SelectRuntimes(native, moat-kvm) = %v, %v; want both in that order, moat-kvm no longer skipped", got, err)
	}
	if _, err := SelectRuntimes(all, []string{"kata"}); err == nil {
		t.Error("SelectRuntimes accepted an unknown name")
	}
}

func TestBinaryPath(t *testing.T) {
	dir := t.TempDir()
	exe := filepath.Join(dir, "moat")
	if err := os.WriteFile(exe, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if got, err := (Runtime{Kind: KindOCI, Binary: "$BIN/moat"}).binaryPath(dir); err != nil || got != exe {
		t.Errorf("$BIN/moat = %q, %v; want %q", got, err, exe)
	}
	if _, err := (Runtime{Kind: KindOCI, Binary: "$BIN/runsc"}).binaryPath(dir); err == nil {
		t.Error("a missing $BIN/runsc was found")
	}
	if _, err := (Runtime{Kind: KindOCI, Binary: "$HOME/moat"}).binaryPath(dir); err == nil || !strings.Contains(err.Error(), "$HOME") {
		t.Errorf("$HOME/moat: error %v, want one naming $HOME", err)
	}
}
