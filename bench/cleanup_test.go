package bench

import "testing"

func TestUnescapeMountinfo(t *testing.T) {
	for in, want := range map[string]string{
		`/tmp/moat-bench-1/state/runsc/null-netns`: "/tmp/moat-bench-1/state/runsc/null-netns",
		`/tmp/a\040b`:  "/tmp/a b",
		`/tmp/tab\011`: "/tmp/tab\t",
		`/tmp/x\04`:    `/tmp/x\04`, // truncated escape: left alone
	} {
		if got := unescapeMountinfo(in); got != want {
			t.Errorf("unescapeMountinfo(%q) = %q, want %q", in, got, want)
		}
	}
}
