package bench

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// Projects are the small working trees that Wall workloads with a
// Project run in, as an agent's tool calls run in its checkout. Each is
// made once per session, in the bundle's /data (containers start in
// /data/NAME) and in each command runtime's scratch directory, which
// stands for /data there (commandLine).
var projects = map[string]func(ctx context.Context, dir string) error{
	"repo":   makeRepo,
	"pytest": makePytestProject,
}

// Sizes of the git project: a small library's checkout.
const (
	repoDirs     = 20
	repoFilesPer = 20
)

// makeRepo makes a git repository of repoDirs directories of repoFiles
// source files each, committed, with a clean tree: what `git status`
// walks, stats and compares with its index.
func makeRepo(ctx context.Context, dir string) error {
	for d := range repoDirs {
		sub := filepath.Join(dir, fmt.Sprintf("pkg%02d", d))
		if err := os.MkdirAll(sub, 0o755); err != nil {
			return err
		}
		for f := range repoFilesPer {
			src := fmt.Sprintf("// file %d of package %d\npackage pkg%02d\n\nfunc F%d() int { return %d }\n%s",
				f, d, d, f, d*repoFilesPer+f, strings.Repeat("// padding to a typical source file's size\n", 20))
			if err := os.WriteFile(filepath.Join(sub, fmt.Sprintf("f%02d.go", f)), []byte(src), 0o644); err != nil {
				return err
			}
		}
	}
	git := [][]string{
		{"init", "-q"},
		{"add", "-A"},
		{"-c", "user.name=moat-bench", "-c", "user.email=bench@moat.invalid", "commit", "-q", "-m", "the project"},
	}
	for _, args := range git {
		cmd := exec.CommandContext(ctx, "git", args...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("git %s in %s: %v: %s", args[len(args)-1], dir, err, strings.TrimSpace(string(out)))
		}
	}
	return nil
}

// Sizes of the pytest project: a package and its tests.
const (
	pytestModules = 5
	pytestCases   = 10
)

// makePytestProject makes a Python package of pytestModules modules and
// a test file for each with pytestCases parametrised cases: pytest's
// collection, imports and assertion rewriting, as a small project's test
// run has them.
func makePytestProject(_ context.Context, dir string) error {
	for _, d := range []string{"calc", "tests"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			return err
		}
	}
	files := map[string]string{"calc/__init__.py": "", "pyproject.toml": "[tool.pytest.ini_options]\ntestpaths = [\"tests\"]\n"}
	for m := range pytestModules {
		files[fmt.Sprintf("calc/m%d.py", m)] = fmt.Sprintf("def scale(x):\n    return x * %d\n\n\ndef offset(x):\n    return x + %d\n", m+1, m)
		files[fmt.Sprintf("tests/test_m%d.py", m)] = fmt.Sprintf(`import pytest

from calc import m%[1]d


@pytest.mark.parametrize("x", range(%[2]d))
def test_scale(x):
    assert m%[1]d.scale(x) == x * %[3]d


def test_offset():
    assert m%[1]d.offset(1) == 1 + %[1]d
`, m, pytestCases, m+1)
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// makeProjects makes w's project, if it has one, in each of dirs (where
// it is not made yet), and returns the directory the containers start
// in: /data/NAME.
func makeProjects(ctx context.Context, w Workload, dirs []string) (string, error) {
	if w.Project == "" {
		return "", nil
	}
	build, ok := projects[w.Project]
	if !ok {
		return "", fmt.Errorf("workload %s: unknown project %q", w.Name, w.Project)
	}
	for _, d := range dirs {
		p := filepath.Join(d, w.Project)
		if _, err := os.Stat(p); err == nil {
			continue
		}
		if err := build(ctx, p); err != nil {
			return "", fmt.Errorf("workload %s: making its project: %w", w.Name, err)
		}
	}
	return filepath.Join(dataDir, w.Project), nil
}
