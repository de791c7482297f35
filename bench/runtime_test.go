package bench

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/moat-sandbox/moat/internal/ocirun"
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

func TestRuntimeMissingWhatItNeedsSaysWhich(t *testing.T) {
	have := filepath.Join(t.TempDir(), "device")
	if err := os.WriteFile(have, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	gone := filepath.Join(t.TempDir(), "gone")
	if got := (Runtime{Needs: []string{have}}).missing(); got != "" {
		t.Errorf("a runtime whose needs are all here misses %q", got)
	}
	if got := (Runtime{Needs: []string{have, gone}}).missing(); got != gone {
		t.Errorf("missing() = %q, want %q", got, gone)
	}
	rts, err := DefaultRuntimes()
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(rts, func(rt Runtime) bool { return rt.Name == "moat-kvm" })
	if i < 0 || !slices.Contains(rts[i].Needs, "/dev/kvm") || rts[i].Skip != "" {
		t.Errorf("runtimes.json's moat-kvm should run by default where /dev/kvm is: %+v", rts)
	}
}

func TestParseRuntimesRejects(t *testing.T) {
	for _, bad := range []string{
		`[{"name": "a", "kind": "oci", "binary": "x"}, {"name": "a", "kind": "oci", "binary": "y"}]`,
		`[{"name": "a", "kind": "vm", "binary": "x"}]`,
		`[{"name": "a", "kind": "oci"}]`,
		`[{"kind": "native"}]`,
		`[{"name": "a", "kind": "native", "platform": "kvm"}]`,
		`[{"name": "a", "kind": "native", "runsc_platform": "systrap"}]`,
	} {
		if _, err := ParseRuntimes([]byte(bad)); err == nil {
			t.Errorf("ParseRuntimes(%s) accepted it", bad)
		}
	}
}

// TestEveryRunscGetsRunscFlags: no entry of runtimes.json runs runsc
// without the flags ocirun defines for it (the host's network above all).
func TestEveryRunscGetsRunscFlags(t *testing.T) {
	rts, err := DefaultRuntimes()
	if err != nil {
		t.Fatal(err)
	}
	for _, rt := range rts {
		if filepath.Base(rt.Binary) != "runsc" {
			continue
		}
		want := ocirun.RunscFlags(rt.RunscPlatform)
		if rt.RunscPlatform == "" || !slices.Equal(rt.Flags()[:min(len(want), len(rt.Flags()))], want) {
			t.Errorf("%s runs %s with flags %q, want runsc_platform set and %q first", rt.Name, rt.Binary, rt.Flags(), want)
		}
	}
	moat := Runtime{Args: []string{"--platform=systrap"}}
	if got := moat.Flags(); !slices.Equal(got, moat.Args) {
		t.Errorf("a runtime without runsc_platform gets %q, want its args alone", got)
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
