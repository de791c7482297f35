package conformance

import (
	"strings"
	"testing"
)

func TestProgramsParse(t *testing.T) {
	progs, err := Programs()
	if err != nil {
		t.Fatal(err)
	}
	if len(progs) == 0 {
		t.Fatal("no programs embedded")
	}
	for _, p := range progs {
		if !strings.HasPrefix(string(p.source), "/*") {
			t.Errorf("%s does not open with a comment saying what it checks", p.File)
		}
		seen := map[string]bool{}
		for _, c := range p.Covers {
			if seen[c] {
				t.Errorf("%s covers %s twice", p.File, c)
			}
			seen[c] = true
		}
	}
}

func TestParseProgramRejects(t *testing.T) {
	for _, tc := range []struct{ file, src string }{
		{"nounderscore.c", "// covers: read\n"},
		{"file_x.h", "// covers: read\n"},
		{"_x.c", "// covers: read\n"},
		{"file_x.c", "int main(void) { return 0; }\n"},
		{"file_x.c", "// covers:\n"},
		{"file_x.c", "// covers: read\n// covers: write\n"},
	} {
		if _, err := parseProgram(tc.file, []byte(tc.src)); err == nil {
			t.Errorf("parseProgram(%q, %q) accepted it", tc.file, tc.src)
		}
	}
	p, err := parseProgram("mm_brk_shrink.c", []byte("/* x */\n// covers: brk  mmap\n"))
	if err != nil {
		t.Fatal(err)
	}
	if p.Name != "mm/brk_shrink" || p.Family != "mm" || strings.Join(p.Covers, ",") != "brk,mmap" {
		t.Errorf("parsed %+v", p)
	}
}
