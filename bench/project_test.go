package bench

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestAWorkloadsProjectIsMadeOnceInEachDirectoryAndIsItsCwd(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed: the repo project needs it (make bench-deps installs it)")
	}
	a, b := t.TempDir(), t.TempDir()
	w := Workload{Name: "git-status", Project: "repo"}
	cwd, err := makeProjects(t.Context(), w, []string{a, b})
	if err != nil {
		t.Fatal(err)
	}
	if cwd != "/data/repo" {
		t.Errorf("cwd %s, want /data/repo", cwd)
	}
	for _, d := range []string{a, b} {
		cmd := exec.Command("git", "status", "--porcelain")
		cmd.Dir = filepath.Join(d, "repo")
		out, err := cmd.CombinedOutput()
		if err != nil || len(out) != 0 {
			t.Errorf("%s: git status: %v %q, want a clean tree", d, err, out)
		}
		files, _ := filepath.Glob(filepath.Join(d, "repo", "pkg*", "*.go"))
		if len(files) != repoDirs*repoFilesPer {
			t.Errorf("%s: %d files, want %d", d, len(files), repoDirs*repoFilesPer)
		}
	}
	// A second session's call keeps what is there.
	marker := filepath.Join(a, "repo", "marker")
	if err := os.WriteFile(marker, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := makeProjects(t.Context(), w, []string{a}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(marker); err != nil {
		t.Errorf("the project was made again: %v", err)
	}
}

func TestThePytestProjectsTestsPassNatively(t *testing.T) {
	if out, err := exec.Command("/usr/bin/python3", "-c", "import pytest").CombinedOutput(); err != nil {
		t.Skipf("python3 with pytest is not installed (make bench-deps installs python3-pytest): %v %s", err, out)
	}
	d := t.TempDir()
	if _, err := makeProjects(t.Context(), Workload{Name: "pytest", Project: "pytest"}, []string{d}); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("/usr/bin/python3", "-m", "pytest", "-q", "-p", "no:cacheprovider")
	cmd.Dir = filepath.Join(d, "pytest")
	out, err := cmd.CombinedOutput()
	if want := "55 passed"; err != nil || !strings.Contains(string(out), want) {
		t.Errorf("pytest: %v\n%s\nwant %q", err, out, want)
	}
}
