package bench

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

func TestSelectWorkloads(t *testing.T) {
	got, err := SelectWorkloads([]string{"getppid", "run-true"})
	if err != nil || len(got) != 2 || got[0].Name != "run-true" || got[1].Name != "getppid" {
		t.Errorf("SelectWorkloads(getppid, run-true) = %v, %v; want both in table order", got, err)
	}
	if _, err := SelectWorkloads([]string{"getppid", "nope"}); err == nil {
		t.Error("SelectWorkloads accepted an unknown name")
	}
}

func TestWorkloadsHaveSources(t *testing.T) {
	for _, w := range Workloads {
		for _, program := range w.Helpers {
			if _, err := sources.Open("workloads/" + program + ".c"); err != nil {
				t.Errorf("%s: helper %q not embedded (%v)", w.Name, program, err)
			}
		}
		if w.Kind == Micro {
			if _, err := sources.Open("workloads/" + w.Program + ".c"); err != nil || w.Iterations <= 0 {
				t.Errorf("%s: program %q not embedded (%v) or no default iterations", w.Name, w.Program, err)
			}
		} else if len(w.Argv) == 0 && w.Kind != Serve {
			t.Errorf("%s: a %s workload with nothing to run", w.Name, w.Kind)
		}
	}
}

func TestArgv(t *testing.T) {
	w := Workload{Kind: Micro, Program: "getppid", Iterations: 1000}
	if got, want := w.argv(0, 2*time.Second), []string{"/bench/getppid", "1000", "2000"}; !slices.Equal(got, want) {
		t.Errorf("argv = %v, want %v", got, want)
	}
	if got := w.argv(5, time.Second); got[1] != "5" {
		t.Errorf("argv with 5 iterations = %v", got)
	}
}

func TestMissing(t *testing.T) {
	rootfs := t.TempDir()
	for _, d := range []string{"usr/bin", "bench"} {
		if err := os.MkdirAll(filepath.Join(rootfs, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// Debian's layout: /bin a relative link to usr/bin, and an absolute
	// link that would point out of the rootfs if followed on the host.
	if err := os.Symlink("usr/bin", filepath.Join(rootfs, "bin")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/etc/alternatives/true", filepath.Join(rootfs, "usr/bin/true")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(rootfs, "bench/fork-exec"), nil, 0o755); err != nil {
		t.Fatal(err)
	}
	w := Workload{Program: "fork-exec", Needs: []string{"/bin/true", "/usr/bin/python3"}}
	if got, err := w.missing(rootfs); err != nil || got != "/usr/bin/python3" {
		t.Errorf("missing = %q, %v; want /usr/bin/python3", got, err)
	}
	w = Workload{Program: "getppid"}
	if got, err := w.missing(rootfs); err != nil || got != "/bench/getppid" {
		t.Errorf("missing = %q, %v; want /bench/getppid", got, err)
	}
}
