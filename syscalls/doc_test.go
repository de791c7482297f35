package syscalls

import (
	"bufio"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

var updateDoc = flag.Bool("update", false, "rewrite docs/syscalls.md from the table")

const docPath = "../docs/syscalls.md"

// coverage reads the `// covers:` line of every conformance program and
// returns, for each syscall name, the programs that assert its behaviour.
func coverage(t *testing.T) map[string][]string {
	t.Helper()
	files, err := filepath.Glob("../conformance/programs/*.c")
	if err != nil || len(files) == 0 {
		t.Fatalf("no conformance programs found: %v", err)
	}
	cov := make(map[string][]string)
	for _, f := range files {
		fh, err := os.Open(f)
		if err != nil {
			t.Fatal(err)
		}
		prog := strings.TrimSuffix(filepath.Base(f), ".c")
		sc := bufio.NewScanner(fh)
		for sc.Scan() {
			if rest, ok := strings.CutPrefix(sc.Text(), "// covers:"); ok {
				for _, name := range strings.Fields(rest) {
					cov[name] = append(cov[name], prog)
				}
			}
		}
		fh.Close()
	}
	return cov
}

// renderDoc is docs/syscalls.md.
func renderDoc(cov map[string][]string) string {
	entries := Entries()
	nrs := make([]int, 0, len(entries))
	count := map[Support]int{}
	for nr, e := range entries {
		nrs = append(nrs, int(nr))
		count[e.Support]++
	}
	sort.Ints(nrs)
	var b strings.Builder
	b.WriteString("# System calls\n\n")
	b.WriteString("Generated from the table in syscalls/linux64.go by `make docs`; a test fails when it is stale.\n")
	b.WriteString("Every x86-64 system call, with its support level in moat and the conformance programs\n")
	b.WriteString("(conformance/programs/) that assert its behaviour natively, under runc and under moat.\n")
	b.WriteString("Calls marked none answer ENOSYS (or the errno in the note) and are logged once per name.\n\n")
	fmt.Fprintf(&b, "%d full, %d partial, %d none.\n\n", count[Full], count[Partial], count[None])
	b.WriteString("| nr | name | support | conformance | note |\n|---:|---|---|---|---|\n")
	for _, nr := range nrs {
		e := entries[uintptr(nr)]
		progs := cov[e.Name]
		links := make([]string, len(progs))
		for i, p := range progs {
			links[i] = fmt.Sprintf("[%s](../conformance/programs/%s.c)", p, p)
		}
		fmt.Fprintf(&b, "| %d | %s | %s | %s | %s |\n", nr, e.Name, e.Support, strings.Join(links, " "), e.Note)
	}
	return b.String()
}

// TestSyscallDocUpToDate fails when docs/syscalls.md does not match the
// table; `make docs` rewrites it.
func TestSyscallDocUpToDate(t *testing.T) {
	want := renderDoc(coverage(t))
	if *updateDoc {
		if err := os.WriteFile(docPath, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	got, err := os.ReadFile(docPath)
	if err != nil || string(got) != want {
		t.Fatalf("docs/syscalls.md is stale: run `make docs`")
	}
}

// TestFullSyscallsHaveConformance: "full" is a claim a conformance program
// must back.
func TestFullSyscallsHaveConformance(t *testing.T) {
	cov := coverage(t)
	for nr, e := range Entries() {
		if e.Support == Full && len(cov[e.Name]) == 0 {
			t.Errorf("%s (%d) is marked full but no conformance program covers it", e.Name, nr)
		}
	}
}

// TestCoveredNamesExist catches a typo in a covers line.
func TestCoveredNamesExist(t *testing.T) {
	known := make(map[string]bool)
	for _, n := range names {
		known[n] = true
	}
	for name, progs := range coverage(t) {
		if !known[name] {
			t.Errorf("%v cover %q, which is not an x86-64 system call", progs, name)
		}
	}
}

// TestTableNamesMatchNumbers keeps the table's names and numbers in step.
func TestTableNamesMatchNumbers(t *testing.T) {
	for nr, e := range table {
		if e.Name != "" && e.Name != names[nr] {
			t.Errorf("table[%d] is named %q, but %d is %q", nr, e.Name, nr, names[nr])
		}
	}
}
