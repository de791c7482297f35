package mountinfo

import "testing"

func TestParseReadsTheFieldsAroundTheOptionalOnes(t *testing.T) {
	got := Parse(`21 1 254:0 / / rw,relatime shared:1 - ext4 /dev/vda rw
32 21 0:28 /a\040b /mnt/with\040space rw - tmpfs my\134tmpfs rw
33 21 0:29 / /short rw
34 21 0:30 / /none rw master:2 shared:3 - proc proc rw
`)
	want := []Mount{
		{"/", "/", "ext4", "/dev/vda", "rw"},
		{"/a b", "/mnt/with space", "tmpfs", `my\tmpfs`, "rw"},
		{"/", "/none", "proc", "proc", "rw"},
	}
	if len(got) != len(want) {
		t.Fatalf("parsed %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("line %d: %+v, want %+v", i, got[i], want[i])
		}
	}
}

func TestUnescapeUndoesTheKernelsOctalEscapes(t *testing.T) {
	for in, want := range map[string]string{
		`/tmp/moat-bench-1/state/runsc/null-netns`: "/tmp/moat-bench-1/state/runsc/null-netns",
		`/tmp/a\040b`:  "/tmp/a b",
		`/tmp/tab\011`: "/tmp/tab\t",
		`/x\134y`:      `/x\y`,
		`/short\04`:    `/short\04`, // a truncated escape is left alone
	} {
		if got := unescape(in); got != want {
			t.Errorf("unescape(%q) = %q, want %q", in, got, want)
		}
	}
}
