package kernel

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// shebangCase is a script's first bytes and what Linux makes of them: the
// interpreter and its optional argument, or an errno.
type shebangCase struct {
	name  string
	file  string
	words []string
	err   error
}

// headOf is what loadProgram hands parseShebang: the file's first
// scriptHeaderMax bytes at most.
func headOf(file string) []byte {
	return []byte(file[:min(len(file), scriptHeaderMax)])
}

// shebangCases follow binfmt_script (Linux 6.1's load_script, unchanged
// in 6.18): each was run as a script on the host, with an interpreter
// that printed its argv.
func shebangCases() []shebangCase {
	const sh = "/bin/sh"
	x := func(n int) string { return strings.Repeat("x", n) }
	pad := func(n int) string { return strings.Repeat(" ", n) }
	// The buffer holds 256 bytes; without a newline in them its last
	// byte, index 255, gives way to the NUL that ends the line.
	argMax := scriptHeaderMax - 1 - len("#!"+sh+" ")
	return []shebangCase{
		{"interpreter alone", "#!/bin/sh\necho\n", []string{sh}, nil},
		{"interpreter and argument", "#!/bin/sh -e\n", []string{sh, "-e"}, nil},
		{"blanks before the interpreter", "#! \t /bin/sh -e\n", []string{sh, "-e"}, nil},
		{"tabs as separators", "#!\t/bin/sh\t-e\n", []string{sh, "-e"}, nil},
		{"one argument with blanks inside, trailing blanks dropped", "#!/bin/sh  a b  c \t \n", []string{sh, "a b  c"}, nil},
		{"a tab, then words", "#!/bin/sh\targ1 arg2\n", []string{sh, "arg1 arg2"}, nil},
		{"blanks and tabs before the argument", "#!/bin/sh \t arg\n", []string{sh, "arg"}, nil},
		{"a CR is no blank", "#!/bin/sh -e \r\n", []string{sh, "-e \r"}, nil},
		{"a CR ends no name", "#!/bin/sh\r\n", []string{sh + "\r"}, nil},
		{"a vertical tab ends no name", "#!/bin/sh\v\n", []string{sh + "\v"}, nil},
		{"only the first line counts", "#!/bin/sh a\nb c\n", []string{sh, "a"}, nil},
		{"a NUL ends the interpreter", "#!/bin/sh\x00junk\n", []string{sh}, nil},
		{"a NUL ends the argument", "#!/bin/sh a\x00b\n", []string{sh, "a"}, nil},
		// A file shorter than the buffer ends in NULs.
		{"a file without newline", "#!/bin/sh", []string{sh}, nil},
		{"a file without newline keeps the argument's trailing blanks", "#!/bin/sh -e  ", []string{sh, "-e  "}, nil},
		{"a NUL after the argument's trailing blanks", "#!/bin/sh -e  \x00zz\n", []string{sh, "-e  "}, nil},
		{"a file ending in blanks has an empty argument", "#!/bin/sh    ", []string{sh, ""}, nil},
		// An empty name is still a name: Linux opens "" (the working
		// directory, EACCES). Only a line of blanks has none.
		{"#! alone", "#!", []string{""}, nil},
		{"#! and blanks, no newline", "#!    ", []string{""}, nil},
		{"a NUL right after #!", "#!\x00/bin/sh\n", []string{""}, nil},
		{"an empty line", "#!\n", nil, unix.ENOEXEC},
		{"a line of blanks", "#!   \t \n", nil, unix.ENOEXEC},

		{"a newline at byte 255", "#!/bin/sh " + x(argMax) + "\n", []string{sh, x(argMax)}, nil},
		{"a newline at byte 256: the argument loses its last byte", "#!/bin/sh " + x(argMax+1) + "\n", []string{sh, x(argMax)}, nil},
		{"a newline far past the buffer", "#!/bin/sh " + x(argMax+50) + "\n", []string{sh, x(argMax)}, nil},
		{"a 255-byte file without newline", "#!/bin/sh " + x(argMax), []string{sh, x(argMax)}, nil},
		{"a 256-byte file without newline", "#!/bin/sh " + x(argMax+1), []string{sh, x(argMax)}, nil},
		{"a name the buffer may have cut", "#!/" + x(300) + "\n", nil, unix.ENOEXEC},
		{"a name ending at byte 254, more at 255", "#!" + pad(255-2-len(sh)) + sh + "zzzz\n", nil, unix.ENOEXEC},
		{"a name ending at byte 254, a blank at 255", "#!" + pad(255-2-len(sh)) + sh + " zzzz\n", []string{sh}, nil},
		{"a name ending at byte 254, a tab at 255", "#!" + pad(255-2-len(sh)) + sh + "\tzzzz\n", []string{sh}, nil},
		{"a name ending at byte 254, a NUL at 255", "#!" + pad(255-2-len(sh)) + sh + "\x00zzzz\n", []string{sh}, nil},
		{"an argument whose one byte is byte 255", "#!" + pad(254-2-len(sh)) + sh + " zzzz\n", []string{sh}, nil},
		{"blanks past the buffer", "#!" + pad(300) + sh + "\n", nil, unix.ENOEXEC},
	}
}

func TestParseShebangFollowsBinfmtScript(t *testing.T) {
	for _, c := range shebangCases() {
		words, err := parseShebang(headOf(c.file))
		if err != c.err || !slices.Equal(words, c.words) {
			t.Errorf("%s: %q gives %q, %v; want %q, %v", c.name, c.file, words, err, c.words, c.err)
		}
	}
}

func TestParseShebangReadsOnlyTheBuffer(t *testing.T) {
	// What lies past BINPRM_BUF_SIZE changes nothing, wherever the
	// newline is.
	for _, c := range shebangCases() {
		long := c.file + strings.Repeat("\n#!/bin/other arg", 40)
		want, wantErr := parseShebang(headOf(c.file))
		got, err := parseShebang([]byte(long))
		if len(c.file) >= scriptHeaderMax && (err != wantErr || !slices.Equal(got, want)) {
			t.Errorf("%s: %q past the buffer changed %q to %q", c.name, long[scriptHeaderMax:scriptHeaderMax+8], want, got)
		}
	}
}

func FuzzParseShebang(f *testing.F) {
	for _, c := range shebangCases() {
		f.Add(headOf(c.file))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		head := append([]byte("#!"), body...)
		words, err := parseShebang(head)
		if err != nil {
			if err != unix.ENOEXEC {
				t.Fatalf("error %v", err)
			}
			return
		}
		if len(words) < 1 || len(words) > 2 {
			t.Fatalf("%d words: %q", len(words), words)
		}
		interp := words[0]
		if strings.ContainsAny(interp, " \t\n\x00") {
			t.Errorf("interpreter %q holds a blank, newline or NUL", interp)
		}
		if !bytes.Contains(head[:min(len(head), scriptHeaderMax)], []byte(interp)) {
			t.Errorf("interpreter %q is not in the buffer", interp)
		}
		if len(words) == 2 {
			arg := words[1]
			if strings.ContainsAny(arg, "\n\x00") || strings.HasPrefix(arg, " ") || strings.HasPrefix(arg, "\t") {
				t.Errorf("argument %q", arg)
			}
			if len(interp)+len(arg) > scriptHeaderMax-4 {
				t.Errorf("%d bytes of words from a %d-byte buffer", len(interp)+len(arg), scriptHeaderMax)
			}
		}
		// The first line decides, if the buffer holds all of it.
		if nl := bytes.IndexByte(head, '\n'); nl >= 0 && nl < scriptHeaderMax {
			again, err := parseShebang(head[:nl+1])
			if err != nil || !slices.Equal(again, words) {
				t.Errorf("the line alone gives %q, %v; with what follows %q", again, err, words)
			}
		}
	})
}
