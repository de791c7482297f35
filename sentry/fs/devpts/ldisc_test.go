package devpts

import (
	"bytes"
	"slices"
	"testing"

	"golang.org/x/sys/unix"
)

// typed feeds input to l as a master writer would and returns the
// signals it raised.
func typed(t *testing.T, l *ldisc, s string) []int {
	t.Helper()
	n, sigs := l.receive([]byte(s))
	if n != len(s) {
		t.Fatalf("receive(%q) took %d bytes", s, n)
	}
	return sigs
}

// echoed returns and drains what the master would read.
func echoed(l *ldisc) string {
	s := string(l.out)
	l.takeOutput(len(l.out))
	return s
}

// readLine is a canonical read of up to n bytes.
func readLine(l *ldisc, n int) (string, bool) {
	if !l.hasLine() {
		return "", false
	}
	k := min(n, l.readable())
	s := string(l.in[:k])
	l.takeInput(k)
	return s, true
}

func TestCanonicalReadReturnsOneLineAtATime(t *testing.T) {
	l := newLdisc()
	typed(t, l, "one\ntwo\nthr")
	if got, _ := readLine(l, 100); got != "one\n" {
		t.Errorf("first read %q, want %q", got, "one\n")
	}
	if got, _ := readLine(l, 2); got != "tw" {
		t.Errorf("short read %q, want the line's start %q", got, "tw")
	}
	if got, _ := readLine(l, 100); got != "o\n" {
		t.Errorf("next read %q, want the line's rest %q", got, "o\n")
	}
	if _, ok := readLine(l, 100); ok {
		t.Error("a line being edited was readable")
	}
	if n := l.pendingInput(); n != 0 {
		t.Errorf("FIONREAD counted %d bytes of an unfinished line", n)
	}
}

func TestEraseCharactersEditTheLineAndEchoAsLinuxDoes(t *testing.T) {
	// The bytes Linux 6.18 echoes for this input with a new pty's settings:
	// DEL erases "c" with \b \b, DEL erases the tab with six \b (it
	// started at column 2), ^W erases the word "abx", ^U then finds an
	// empty line.
	l := newLdisc()
	typed(t, l, "ab\tc\x7f\x7fx\x17\x15yz\n")
	want := "ab\tc\b \b" + "\b\b\b\b\b\b" + "x" + "\b \b\b \b\b \b" + "yz\r\n"
	if got := echoed(l); got != want {
		t.Errorf("echo %q, want %q", got, want)
	}
	if got, _ := readLine(l, 100); got != "yz\n" {
		t.Errorf("line %q, want %q", got, "yz\n")
	}
}

func TestWordEraseSkipsPunctuationThenErasesTheWord(t *testing.T) {
	// Linux's ^W is BSD's ALTWERASE: what is not a letter, digit or '_'
	// before the word goes with it, and the word ends at the next one.
	l := newLdisc()
	typed(t, l, "cp a.txt  \x17\n")
	if got, _ := readLine(l, 100); got != "cp a.\n" {
		t.Errorf("line %q, want %q", got, "cp a.\n")
	}
	typed(t, l, "cp a.txt\x17\x17\n")
	if got, _ := readLine(l, 100); got != "cp \n" {
		t.Errorf("line %q, want %q", got, "cp \n")
	}
}

func TestKillWithoutECHOKEEchoesTheKillCharacterAndANewline(t *testing.T) {
	l := newLdisc()
	l.termios.Lflag &^= unix.ECHOKE
	typed(t, l, "abc")
	echoed(l)
	typed(t, l, "\x15")
	if got := echoed(l); got != "^U\r\n" {
		t.Errorf("kill echo %q, want %q", got, "^U\r\n")
	}
	typed(t, l, "d\n")
	if got, _ := readLine(l, 100); got != "d\n" {
		t.Errorf("line %q, want %q", got, "d\n")
	}
}

func TestEraseWithoutECHOEEchoesTheEraseCharacter(t *testing.T) {
	l := newLdisc()
	l.termios.Lflag &^= unix.ECHOE
	typed(t, l, "ab\x7f")
	if got := echoed(l); got != "ab^?" {
		t.Errorf("echo %q, want %q", got, "ab^?")
	}
}

func TestEOFEndsALineWithoutATerminatorAndAloneReadsAsEndOfFile(t *testing.T) {
	l := newLdisc()
	typed(t, l, "abc\x04\x04")
	if got := echoed(l); got != "abc" {
		t.Errorf("echo %q: VEOF is not echoed", got)
	}
	if got, _ := readLine(l, 100); got != "abc" {
		t.Errorf("line %q, want %q", got, "abc")
	}
	got, ok := readLine(l, 100)
	if !ok || got != "" {
		t.Errorf("read after a lone VEOF gave %q, %v: want an empty read", got, ok)
	}
	if l.hasLine() {
		t.Error("the end of file was seen twice")
	}
}

func TestSignalCharactersRaiseSignalsFlushInputAndKeepOutput(t *testing.T) {
	l := newLdisc()
	l.transmit([]byte("hello"))
	for _, c := range []struct {
		in   string
		sig  unix.Signal
		echo string
	}{{"\x03", unix.SIGINT, "^C"}, {"\x1c", unix.SIGQUIT, "^\\"}, {"\x1a", unix.SIGTSTP, "^Z"}} {
		typed(t, l, "abc")
		sigs := typed(t, l, c.in)
		if !slices.Equal(sigs, []int{int(c.sig)}) {
			t.Errorf("%q raised %v, want %v", c.in, sigs, c.sig)
		}
		if !bytes.HasSuffix(l.out, []byte("abc"+c.echo)) {
			t.Errorf("%q: output %q, want it to end in %q", c.in, l.out, "abc"+c.echo)
		}
		if len(l.in) != 0 {
			t.Errorf("%q left input %q: without NOFLSH it is flushed", c.in, l.in)
		}
	}
	if !bytes.HasPrefix(l.out, []byte("hello")) {
		t.Errorf("output %q lost what the replica wrote before the signal", l.out)
	}
}

func TestNOFLSHKeepsInputAcrossASignal(t *testing.T) {
	l := newLdisc()
	l.termios.Lflag |= unix.NOFLSH
	typed(t, l, "ab\x03c\n")
	if got, _ := readLine(l, 100); got != "abc\n" {
		t.Errorf("line %q, want %q", got, "abc\n")
	}
}

func TestWithoutISIGSignalCharactersAreInput(t *testing.T) {
	l := newLdisc()
	l.termios.Lflag &^= unix.ISIG
	if sigs := typed(t, l, "\x03\n"); len(sigs) != 0 {
		t.Errorf("raised %v without ISIG", sigs)
	}
	if got, _ := readLine(l, 100); got != "\x03\n" {
		t.Errorf("line %q, want %q", got, "\x03\n")
	}
}

func TestInputCarriageReturnAndNewlineTranslation(t *testing.T) {
	for _, c := range []struct {
		name  string
		iflag uint32
		in    string
		want  string
	}{
		{"ICRNL", unix.ICRNL, "a\r", "a\n"},
		{"IGNCR", unix.IGNCR | unix.ICRNL, "a\rb\n", "ab\n"},
		{"INLCR", unix.INLCR, "a\nb\r\x04", "a\rb\r"},
	} {
		l := newLdisc()
		l.termios.Iflag = c.iflag
		typed(t, l, c.in)
		got, _ := readLine(l, 100)
		if got != c.want {
			t.Errorf("%s: %q read as %q, want %q", c.name, c.in, got, c.want)
		}
	}
}

func TestOutputProcessing(t *testing.T) {
	for _, c := range []struct {
		name  string
		oflag uint32
		in    string
		want  string
	}{
		{"ONLCR", unix.OPOST | unix.ONLCR, "a\nb", "a\r\nb"},
		{"no OPOST", unix.ONLCR, "a\nb", "a\nb"},
		{"OCRNL", unix.OPOST | unix.OCRNL, "a\rb", "a\nb"},
		{"ONOCR", unix.OPOST | unix.ONOCR, "\ra\r", "a\r"},
		{"XTABS", unix.OPOST | unix.XTABS, "ab\tc", "ab      c"},
		{"OLCUC", unix.OPOST | unix.OLCUC, "aB", "AB"},
	} {
		l := newLdisc()
		l.termios.Oflag = c.oflag
		if n := l.transmit([]byte(c.in)); n != len(c.in) {
			t.Errorf("%s: took %d bytes", c.name, n)
		}
		if got := string(l.out); got != c.want {
			t.Errorf("%s: %q came out as %q, want %q", c.name, c.in, got, c.want)
		}
	}
}

func TestEchoFlags(t *testing.T) {
	for _, c := range []struct {
		name  string
		lflag uint32
		in    string
		want  string
	}{
		{"no ECHO", unix.ICANON, "ab\n", ""},
		{"ECHONL without ECHO", unix.ICANON | unix.ECHONL, "ab\n", "\r\n"},
		{"ECHOCTL", unix.ICANON | unix.ECHO | unix.ECHOCTL, "\x01\t\n", "^A\t\r\n"},
		{"no ECHOCTL", unix.ICANON | unix.ECHO, "\x01\n", "\x01\r\n"},
		{"non-canonical", unix.ECHO | unix.ECHOCTL, "a\x01\n", "a^A\r\n"},
	} {
		l := newLdisc()
		l.termios.Lflag = c.lflag
		typed(t, l, c.in)
		if got := echoed(l); got != c.want {
			t.Errorf("%s: %q echoed %q, want %q", c.name, c.in, got, c.want)
		}
	}
}

func TestLNEXTMakesTheNextCharacterLiteral(t *testing.T) {
	l := newLdisc()
	if sigs := typed(t, l, "\x16\x03\x16\x7f\n"); len(sigs) != 0 {
		t.Errorf("a quoted ^C raised %v", sigs)
	}
	if got, _ := readLine(l, 100); got != "\x03\x7f\n" {
		t.Errorf("line %q, want the quoted ^C and DEL", got)
	}
	if got := echoed(l); got != "^\b^C^\b^?\r\n" {
		t.Errorf("echo %q", got)
	}
}

func TestLeavingCanonicalModeMakesTheEditedLineReadable(t *testing.T) {
	l := newLdisc()
	typed(t, l, "abc")
	raw := l.termios
	raw.Lflag &^= unix.ICANON
	l.setTermios(raw)
	if n := l.readable(); n != 3 {
		t.Errorf("%d bytes readable, want the 3 typed", n)
	}
	typed(t, l, "\x7f")
	if string(l.in) != "abc\x7f" {
		t.Errorf("input %q: outside canonical mode VERASE is a character", l.in)
	}
	l.setTermios(defaultTermios())
	if !l.hasLine() || l.readable() != 4 {
		t.Errorf("back in canonical mode, pending input is one line: got %d bytes, line %v", l.readable(), l.hasLine())
	}
}

func TestIXONStartAndStopCharactersControlOutputAndAreNotInput(t *testing.T) {
	l := newLdisc()
	typed(t, l, "\x13")
	if !l.stopped {
		t.Error("VSTOP did not stop output")
	}
	typed(t, l, "\x11")
	if l.stopped {
		t.Error("VSTART did not restart output")
	}
	typed(t, l, "\n")
	if got, _ := readLine(l, 100); got != "\n" {
		t.Errorf("line %q: VSTART and VSTOP are not input", got)
	}
}

func TestACanonicalLineStopsGrowingAtTheBufferSize(t *testing.T) {
	l := newLdisc()
	l.termios.Lflag &^= unix.ECHO
	long := bytes.Repeat([]byte("x"), inputCap+100)
	if n, _ := l.receive(long); n != len(long) {
		t.Errorf("took %d of %d bytes: a line no one can finish must not block its writer", n, len(long))
	}
	typed(t, l, "\n")
	got, _ := readLine(l, 2*inputCap)
	if len(got) != inputCap {
		t.Errorf("line of %d bytes, want %d (%d characters and the newline)", len(got), inputCap, inputCap-1)
	}
}

func TestRawInputBlocksItsWriterWhenFull(t *testing.T) {
	l := newLdisc()
	l.termios.Lflag &^= unix.ICANON | unix.ECHO
	long := bytes.Repeat([]byte("y"), inputCap+10)
	if n, _ := l.receive(long); n != inputCap {
		t.Errorf("took %d bytes, want %d", n, inputCap)
	}
}
