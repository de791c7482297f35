package ocirun

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestArgsGiveRootThenFlagsThenSubcommand(t *testing.T) {
	r := (&Runtime{Path: "/bin/runsc", Flags: RunscFlags("systrap")}).At("/state")
	got := strings.Join(r.Args("run", "--bundle", "/b", "c1"), " ")
	if want := "--root /state --platform=systrap --network=none run --bundle /b c1"; got != want {
		t.Errorf("Args = %q, want %q", got, want)
	}
	cmd := r.Command("list")
	if cmd.Path != "/bin/runsc" || strings.Join(cmd.Args[1:], " ") != "--root /state --platform=systrap --network=none list" {
		t.Errorf("Command = %s %q", cmd.Path, cmd.Args)
	}
}

func TestRunscIsAlwaysRunWithoutNetwork(t *testing.T) {
	if got := RunscFlags(""); !slices.Equal(got, []string{"--network=none"}) {
		t.Errorf(`RunscFlags("") = %q, want --network=none alone: runsc's own platform`, got)
	}
	if got := RunscFlags("ptrace"); !slices.Equal(got, []string{"--platform=ptrace", "--network=none"}) {
		t.Errorf(`RunscFlags("ptrace") = %q`, got)
	}
}

func TestLifecycleCommandsReachTheRuntimeWithItsFlags(t *testing.T) {
	r := newFake(t)
	addContainers(t, r, "c1")
	// Its pid is 0: a kill would reach the fake's own process group.
	t.Setenv("FAKE_KILL", "ignored")
	if err := r.Kill("c1", "TERM"); err != nil {
		t.Fatal(err)
	}
	st, err := r.State("c1")
	if err != nil || st.ID != "c1" || st.Status != "running" {
		t.Errorf("State(c1) = %+v, %v", st, err)
	}
	if err := r.Delete("c1"); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"--root " + r.Dir + " --debug kill c1 TERM",
		"--root " + r.Dir + " --debug state c1",
		"--root " + r.Dir + " --debug delete --force c1",
	}
	if got := calls(t, r); !slices.Equal(got[len(got)-3:], want) {
		t.Errorf("runtime called as\n%s\nwant the last three\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestLifecycleErrorsNameRuntimeSubcommandAndComplaint(t *testing.T) {
	r := newFake(t)
	_, err := r.State("gone")
	if err == nil || err.Error() != "fake state gone: exit status 1: container gone does not exist" {
		t.Errorf("State(gone): %v", err)
	}
}

func TestSweepDeletesEveryListedContainer(t *testing.T) {
	r := newFake(t)
	addContainers(t, r, "a", "b")
	if err := r.Sweep(); err != nil {
		t.Fatal(err)
	}
	if left, err := r.List(); err != nil || len(left) > 0 {
		t.Errorf("after Sweep the runtime lists %q (%v)", left, err)
	}
}

func TestSweepNamesTheContainersItCouldNotDelete(t *testing.T) {
	r := newFake(t)
	addContainers(t, r, "a", "stuck1", "b")
	err := r.Sweep()
	if err == nil || err.Error() != "fake: could not delete containers stuck1" {
		t.Errorf("Sweep: %v, want it to name stuck1 alone", err)
	}
	if left, _ := r.List(); !slices.Equal(left, []string{"stuck1"}) {
		t.Errorf("after Sweep the runtime lists %q, want stuck1 alone", left)
	}
}

func TestSweepOfARuntimeThatCannotListIsCleanOnlyWhenItsDirectoryIsEmpty(t *testing.T) {
	r := newFake(t)
	t.Setenv("FAKE_LIST", "broken")
	if err := r.Sweep(); err != nil {
		t.Errorf("Sweep of an empty state directory: %v", err)
	}
	addContainers(t, r, "a")
	if err := r.Sweep(); err == nil || !strings.Contains(err.Error(), "unknown flag") {
		t.Errorf("Sweep of a state directory it cannot list: %v, want the runtime's complaint", err)
	}
}

func TestRootRunAsksTheRuntimeToKillAtTheTimeout(t *testing.T) {
	r := newFake(t)
	x := r.Run(context.Background(), "/b", "c1", Stdio{}, Limits{Timeout: 200 * time.Millisecond, Grace: 10 * time.Second})
	if !x.TimedOut || x.Forced || x.Signal != syscall.SIGKILL {
		t.Errorf("Run = %+v, want timed out and ended by the runtime's kill (SIGKILL)", x)
	}
	if got := calls(t, r); !slices.Contains(got, "--root "+r.Dir+" --debug kill c1 KILL") {
		t.Errorf("runtime calls %q have no kill c1 KILL", got)
	}
}

func TestRootRunKillsTheProcessGroupWhenTheRuntimeIgnoresTheKill(t *testing.T) {
	r := newFake(t)
	t.Setenv("FAKE_KILL", "ignored")
	x := r.Run(context.Background(), "/b", "c1", Stdio{}, Limits{Timeout: 100 * time.Millisecond, Grace: 100 * time.Millisecond})
	if !x.TimedOut || !x.Forced || x.Signal != syscall.SIGKILL {
		t.Errorf("Run = %+v, want timed out and forced", x)
	}
	if err := x.Err(); err == nil || err.Error() != "timed out after 100ms" {
		t.Errorf("Err = %v", err)
	}
}

func TestCreateLeavesWhatTheRuntimeSaysInStdio(t *testing.T) {
	r := newFake(t)
	out, err := NewOutput(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	// The fake knows no create: it says so, and fails.
	err = r.Create("/b", "c1", out.Stdio())
	if err == nil || err.Error() != "fake create --bundle /b c1: exit status 64" {
		t.Errorf("Create: %v", err)
	}
	if _, stderr, _ := out.Read(); stderr != "unknown subcommand create\n" {
		t.Errorf("stderr %q", stderr)
	}
}

func TestFindNamesARuntimeAfterItsBinary(t *testing.T) {
	r := newFake(t)
	rt, err := Find(r.Path)
	if err != nil || rt.Name != "fake-runtime" || rt.Path != r.Path || len(rt.Flags) != 0 {
		t.Errorf("Find(%s) = %+v, %v", r.Path, rt, err)
	}
}

func TestLookPathNamesWhatItCannotFind(t *testing.T) {
	dir := t.TempDir()
	plain := filepath.Join(dir, "plain")
	if err := os.WriteFile(plain, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{
		"no-such-runtime-binary": "no-such-runtime-binary not found in $PATH",
		plain:                    plain + " not found or not executable",
		dir + "/":                dir + "/ not found or not executable",
		dir + "/missing":         dir + "/missing not found or not executable",
	} {
		if _, err := LookPath(name); err == nil || err.Error() != want {
			t.Errorf("LookPath(%q): %v, want %q", name, err, want)
		}
	}
}

func TestLookPathMakesARelativePathAbsolute(t *testing.T) {
	r := newFake(t)
	t.Chdir(filepath.Dir(r.Path))
	got, err := LookPath("./fake-runtime")
	if err != nil || got != r.Path {
		t.Errorf("LookPath(./fake-runtime) = %q, %v; want %q", got, err, r.Path)
	}
}

func TestVersionIsTheFirstLine(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "rt")
	if err := os.WriteFile(bin, []byte("#!/bin/sh\necho 'rt version 1.2 '\necho 'commit: x'\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if got := (&Runtime{Path: bin}).Version(context.Background()); got != "rt version 1.2" {
		t.Errorf("Version = %q", got)
	}
	if got := (&Runtime{Path: filepath.Join(dir, "none")}).Version(context.Background()); got != "" {
		t.Errorf("Version of a missing binary = %q, want none", got)
	}
}
