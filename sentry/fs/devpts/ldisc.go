package devpts

import (
	"golang.org/x/sys/unix"
)

// Buffer sizes. inputCap is Linux's N_TTY_BUF_SIZE: what the replica side
// holds unread, and one more than the longest line canonical mode edits.
// outputCap bounds what the replica writes before the master reads it
// (Linux's flip-buffer limit, 64 KiB).
const (
	inputCap  = 4096
	outputCap = 64 << 10
)

// defaultTermios is a new pty's, as Linux's pts driver sets it
// (tty_std_termios with c_cflag B38400|CS8|CREAD).
func defaultTermios() unix.Termios {
	t := unix.Termios{
		Iflag:  unix.ICRNL | unix.IXON,
		Oflag:  unix.OPOST | unix.ONLCR,
		Cflag:  unix.B38400 | unix.CS8 | unix.CREAD,
		Lflag:  unix.ISIG | unix.ICANON | unix.ECHO | unix.ECHOE | unix.ECHOK | unix.ECHOCTL | unix.ECHOKE | unix.IEXTEN,
		Ispeed: 38400,
		Ospeed: 38400,
	}
	// Linux's INIT_C_CC: ^C ^\ DEL ^U ^D, VTIME 0, VMIN 1, ^Q ^S ^Z, ^R ^O ^W ^V.
	cc := map[int]byte{unix.VINTR: 3, unix.VQUIT: 28, unix.VERASE: 127, unix.VKILL: 21, unix.VEOF: 4,
		unix.VMIN: 1, unix.VSTART: 17, unix.VSTOP: 19, unix.VSUSP: 26, unix.VREPRINT: 18,
		unix.VDISCARD: 15, unix.VWERASE: 23, unix.VLNEXT: 22}
	for i, c := range cc {
		t.Cc[i] = c
	}
	return t
}

// ldisc is the line discipline between a pty's two ends (Linux's n_tty):
// what the master writes is input, edited into lines in canonical mode,
// echoed and turned into signals, and read by the replica; what the
// replica writes is output, processed (OPOST) and read by the master. It
// does no locking and no waiting: the pair's lock guards it, and the pair
// blocks its readers and writers.
type ldisc struct {
	termios unix.Termios

	// in is the input the replica has not read. In canonical mode it is
	// the completed lines, whose ends (exclusive offsets into in) are
	// lines, then the line being edited. A line ended by VEOF has no
	// terminator in it; an empty one is an end of file for one read.
	in    []byte
	lines []int
	// out is the output the master has not read, echoes included.
	out []byte

	column      int  // the output column, for tabs and erasing
	canonColumn int  // the column the line being edited started at
	erasing     bool // ECHOPRT: inside a \...\ run of erased characters
	lnext       bool // the next character is literal (VLNEXT)
	stopped     bool // output stopped by VSTOP (IXON) or TCOOFF
}

func newLdisc() *ldisc { return &ldisc{termios: defaultTermios()} }

func (l *ldisc) iflag(f uint32) bool { return l.termios.Iflag&f != 0 }
func (l *ldisc) oflag(f uint32) bool { return l.termios.Oflag&f != 0 }
func (l *ldisc) lflag(f uint32) bool { return l.termios.Lflag&f != 0 }
func (l *ldisc) canonical() bool     { return l.lflag(unix.ICANON) }

// is reports whether c is the control character at index i (a character
// set to 0, _POSIX_VDISABLE, matches nothing).
func (l *ldisc) is(c byte, i int) bool { return l.termios.Cc[i] != 0 && c == l.termios.Cc[i] }

// isCntrl is the kernel's iscntrl, which counts 0x80-0x9f too.
func isCntrl(c byte) bool { return c < 0x20 || c == 0x7f || (c >= 0x80 && c < 0xa0) }

func isAlnum(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

// continuation reports a UTF-8 continuation byte, which takes no column of
// its own when IUTF8 is set.
func (l *ldisc) continuation(c byte) bool { return l.iflag(unix.IUTF8) && c&0xc0 == 0x80 }

// lineStart is where the line being edited starts in in.
func (l *ldisc) lineStart() int {
	if len(l.lines) == 0 {
		return 0
	}
	return l.lines[len(l.lines)-1]
}

// setTermios replaces the settings. Turning canonical mode on makes what
// is pending one line; turning it off makes all of it readable at once
// (Linux's n_tty_set_termios).
func (l *ldisc) setTermios(t unix.Termios) {
	old := l.termios
	l.termios = t
	if (old.Lflag^t.Lflag)&unix.ICANON == 0 {
		if old.Iflag&unix.IXON != 0 && t.Iflag&unix.IXON == 0 {
			l.stopped = false
		}
		return
	}
	l.lines = l.lines[:0]
	if t.Lflag&unix.ICANON != 0 && len(l.in) > 0 {
		l.lines = append(l.lines, len(l.in))
	}
	l.erasing, l.lnext = false, false
}

// inputRoom reports whether input can take one more character: in
// canonical mode a line being edited may fill the buffer, and then only
// its end and editing get through (characters beyond are dropped, as
// Linux does, so that a writer cannot wait for ever on a line no one can
// finish).
func (l *ldisc) inputRoom() bool { return len(l.in) < inputCap }

// inputBlocked reports whether a master writer must wait for the replica
// to read before more input can be taken.
func (l *ldisc) inputBlocked() bool {
	if len(l.in) < inputCap {
		return false
	}
	return !l.canonical() || len(l.lines) > 0
}

// receive processes input from the master, up to the first character that
// finds no room, and returns how many it took and the signals its signal
// characters raise (the caller sends them to the foreground group).
func (l *ldisc) receive(b []byte) (int, []int) {
	var sigs []int
	for i, c := range b {
		if l.inputBlocked() {
			return i, sigs
		}
		if sig := l.receiveChar(c); sig != 0 {
			sigs = append(sigs, sig)
		}
	}
	return len(b), sigs
}

// receiveChar processes one input character (Linux's
// n_tty_receive_char_special and n_tty_receive_char).
func (l *ldisc) receiveChar(c byte) int {
	if l.iflag(unix.ISTRIP) {
		c &= 0x7f
	}
	if l.iflag(unix.IUCLC) && l.lflag(unix.IEXTEN) && c >= 'A' && c <= 'Z' {
		c += 'a' - 'A'
	}
	if l.lnext {
		l.lnext = false
		l.store(c)
		return 0
	}
	if l.iflag(unix.IXON) {
		if l.is(c, unix.VSTART) {
			l.stopped = false
			return 0
		}
		if l.is(c, unix.VSTOP) {
			l.stopped = true
			return 0
		}
	}
	if l.lflag(unix.ISIG) {
		sig := 0
		switch {
		case l.is(c, unix.VINTR):
			sig = int(unix.SIGINT)
		case l.is(c, unix.VQUIT):
			sig = int(unix.SIGQUIT)
		case l.is(c, unix.VSUSP):
			sig = int(unix.SIGTSTP)
		}
		if sig != 0 {
			l.signalChar(c)
			return sig
		}
	}
	if l.stopped && l.iflag(unix.IXON) && l.iflag(unix.IXANY) {
		l.stopped = false
	}
	if c == '\r' {
		if l.iflag(unix.IGNCR) {
			return 0
		}
		if l.iflag(unix.ICRNL) {
			c = '\n'
		}
	} else if c == '\n' && l.iflag(unix.INLCR) {
		c = '\r'
	}
	if l.canonical() {
		switch {
		case l.is(c, unix.VERASE) || l.is(c, unix.VKILL) || l.is(c, unix.VWERASE) && l.lflag(unix.IEXTEN):
			l.erase(c)
			return 0
		case l.is(c, unix.VLNEXT) && l.lflag(unix.IEXTEN):
			l.lnext = true
			if l.lflag(unix.ECHO) {
				l.finishErasing()
				if l.lflag(unix.ECHOCTL) {
					l.echoRaw('^')
					l.echoRaw('\b')
				}
			}
			return 0
		case l.is(c, unix.VREPRINT) && l.lflag(unix.ECHO) && l.lflag(unix.IEXTEN):
			l.finishErasing()
			l.echoChar(c)
			l.echoRaw('\n')
			for _, x := range l.in[l.lineStart():] {
				l.echoChar(x)
			}
			return 0
		case c == '\n':
			if l.lflag(unix.ECHO) || l.lflag(unix.ECHONL) {
				l.echoRaw('\n')
			}
			l.endLine(c, true)
			return 0
		case l.is(c, unix.VEOF):
			l.endLine(0, false)
			return 0
		case l.is(c, unix.VEOL) || l.is(c, unix.VEOL2) && l.lflag(unix.IEXTEN):
			if l.lflag(unix.ECHO) {
				if len(l.in) == l.lineStart() {
					l.canonColumn = l.column
				}
				l.echoChar(c)
			}
			l.endLine(c, true)
			return 0
		}
	}
	l.store(c)
	return 0
}

// store adds an ordinary character, echoing it.
func (l *ldisc) store(c byte) {
	if l.canonical() && len(l.in)-l.lineStart() >= inputCap-1 {
		return // the line is as long as it may get
	}
	if l.lflag(unix.ECHO) {
		l.finishErasing()
		if c == '\n' {
			l.echoRaw('\n')
		} else {
			if len(l.in) == l.lineStart() {
				l.canonColumn = l.column
			}
			l.echoChar(c)
		}
	}
	if l.inputRoom() {
		l.in = append(l.in, c)
	}
}

// endLine completes the line being edited, with its terminator if it has
// one (VEOF adds none).
func (l *ldisc) endLine(c byte, keep bool) {
	if keep {
		l.in = append(l.in, c)
	}
	l.lines = append(l.lines, len(l.in))
}

// signalChar is the rest of a signal character's work: unless NOFLSH,
// pending input goes, and the character is echoed (Linux's
// n_tty_receive_signal_char and isig).
func (l *ldisc) signalChar(c byte) {
	if !l.lflag(unix.NOFLSH) {
		l.flushInput()
	}
	if l.iflag(unix.IXON) {
		l.stopped = false
	}
	if l.lflag(unix.ECHO) {
		l.echoChar(c)
	}
}

// flushInput drops the input the replica has not read.
func (l *ldisc) flushInput() {
	l.in, l.lines = l.in[:0], l.lines[:0]
	l.erasing, l.lnext = false, false
}

// flushOutput drops the output the master has not read.
func (l *ldisc) flushOutput() { l.out = l.out[:0] }

// erase is VERASE, VWERASE and VKILL on the line being edited, with the
// echo the flags ask for (Linux's eraser).
func (l *ldisc) erase(c byte) {
	start := l.lineStart()
	if len(l.in) == start {
		return
	}
	const (
		eraseChar = iota
		eraseWord
		eraseLine
	)
	kind := eraseLine
	switch {
	case l.is(c, unix.VERASE):
		kind = eraseChar
	case l.is(c, unix.VWERASE):
		kind = eraseWord
	default:
		if !l.lflag(unix.ECHO) {
			l.in = l.in[:start]
			return
		}
		if !l.lflag(unix.ECHOK) || !l.lflag(unix.ECHOKE) || !l.lflag(unix.ECHOE) {
			l.in = l.in[:start]
			l.finishErasing()
			l.echoChar(c)
			if l.lflag(unix.ECHOK) {
				l.echoRaw('\n')
			}
			return
		}
	}
	seenAlnum := false
	for len(l.in) > start {
		head := len(l.in) - 1
		for head > start && l.continuation(l.in[head]) {
			head--
		}
		ch := l.in[head]
		if l.continuation(ch) {
			break // never half a character
		}
		if kind == eraseWord {
			if isAlnum(ch) || ch == '_' {
				seenAlnum = true
			} else if seenAlnum {
				break
			}
		}
		erased := l.in[head:]
		l.in = l.in[:head]
		if l.lflag(unix.ECHO) {
			l.echoErase(c, ch, erased, kind == eraseChar, start)
		}
		if kind == eraseChar {
			break
		}
	}
	if len(l.in) == start && l.lflag(unix.ECHO) {
		l.finishErasing()
	}
}

// echoErase shows the erasure of ch (all of erased, for a multi-byte
// character) from the line that starts at start.
func (l *ldisc) echoErase(c, ch byte, erased []byte, oneChar bool, start int) {
	switch {
	case l.lflag(unix.ECHOPRT):
		if !l.erasing {
			l.echoRaw('\\')
			l.erasing = true
		}
		l.echoChar(ch)
		for _, x := range erased[1:] {
			l.echoRaw(x)
			l.column--
		}
	case oneChar && !l.lflag(unix.ECHOE):
		l.echoChar(c)
	case ch == '\t':
		// Back to where the tab started: count the columns since the
		// previous tab, or since the line's start and its column.
		cols, afterTab := 0, false
		for i := len(l.in) - 1; i >= start; i-- {
			x := l.in[i]
			if x == '\t' {
				afterTab = true
				break
			}
			if isCntrl(x) {
				if l.lflag(unix.ECHOCTL) {
					cols += 2
				}
			} else if !l.continuation(x) {
				cols++
			}
		}
		if !afterTab {
			cols += l.canonColumn
		}
		for n := 8 - cols&7; n > 0; n-- {
			l.out = append(l.out, '\b')
			if l.column > 0 {
				l.column--
			}
		}
	default:
		times := 1
		if isCntrl(ch) {
			times = 0
			if l.lflag(unix.ECHOCTL) {
				times = 2
			}
		}
		for ; times > 0; times-- {
			l.echoRaw('\b')
			l.echoRaw(' ')
			l.echoRaw('\b')
		}
	}
}

// finishErasing closes an ECHOPRT run of erased characters.
func (l *ldisc) finishErasing() {
	if l.erasing {
		l.echoRaw('/')
		l.erasing = false
	}
}

// echoChar echoes an input character: with ECHOCTL, a control character
// other than tab as ^X.
func (l *ldisc) echoChar(c byte) {
	if l.lflag(unix.ECHOCTL) && isCntrl(c) && c != '\t' {
		l.echoBytes('^', c^0o100)
		l.column += 2
		return
	}
	l.echoRaw(c)
}

// echoBytes adds bytes to the output as they are, if there is room.
func (l *ldisc) echoBytes(b ...byte) {
	if len(l.out)+len(b) <= outputCap {
		l.out = append(l.out, b...)
	}
}

// echoRaw echoes c through output processing; an echo that finds the
// output full is dropped.
func (l *ldisc) echoRaw(c byte) { l.outputChar(c, outputCap-len(l.out)) }

// transmit processes output from the replica into out, up to what fits,
// and returns how many bytes it took.
func (l *ldisc) transmit(b []byte) int {
	if !l.oflag(unix.OPOST) {
		n := min(len(b), outputCap-len(l.out))
		l.out = append(l.out, b[:n]...)
		return n
	}
	for i, c := range b {
		if !l.outputChar(c, outputCap-len(l.out)) {
			return i
		}
	}
	return len(b)
}

// outputChar processes one output character (Linux's do_output_char),
// unless it needs more than room bytes.
func (l *ldisc) outputChar(c byte, room int) bool {
	if !l.oflag(unix.OPOST) {
		if room < 1 {
			return false
		}
		l.out = append(l.out, c)
		return true
	}
	switch c {
	case '\n':
		if l.oflag(unix.ONLRET) {
			l.column = 0
		}
		if l.oflag(unix.ONLCR) {
			if room < 2 {
				return false
			}
			l.column, l.canonColumn = 0, 0
			l.out = append(l.out, '\r', '\n')
			return true
		}
		l.canonColumn = l.column
	case '\r':
		if l.oflag(unix.ONOCR) && l.column == 0 {
			return true
		}
		if l.oflag(unix.OCRNL) {
			c = '\n'
			if l.oflag(unix.ONLRET) {
				l.column, l.canonColumn = 0, 0
			}
			break
		}
		l.column, l.canonColumn = 0, 0
	case '\t':
		spaces := 8 - l.column&7
		if l.termios.Oflag&unix.TABDLY == unix.XTABS {
			if room < spaces {
				return false
			}
			l.column += spaces
			l.out = append(l.out, "        "[:spaces]...)
			return true
		}
		l.column += spaces
	case '\b':
		if l.column > 0 {
			l.column--
		}
	default:
		if !isCntrl(c) {
			if l.oflag(unix.OLCUC) && c >= 'a' && c <= 'z' {
				c -= 'a' - 'A'
			}
			if !l.continuation(c) {
				l.column++
			}
		}
	}
	if room < 1 {
		return false
	}
	l.out = append(l.out, c)
	return true
}

// readable is how many input bytes a replica read could take now: the
// first line's in canonical mode (0 with a line that is an end of file, so
// check hasLine too), all of them otherwise.
func (l *ldisc) readable() int {
	if l.canonical() {
		if len(l.lines) == 0 {
			return 0
		}
		return l.lines[0]
	}
	return len(l.in)
}

// hasLine reports whether a canonical read would return now.
func (l *ldisc) hasLine() bool { return len(l.lines) > 0 }

// pendingInput is FIONREAD on the replica: in canonical mode the bytes of
// the completed lines, otherwise all.
func (l *ldisc) pendingInput() int {
	if l.canonical() {
		return l.lineStart()
	}
	return len(l.in)
}

// takeInput removes the first n readable bytes; a canonical read that
// reaches the end of its line consumes the line.
func (l *ldisc) takeInput(n int) {
	if l.canonical() && len(l.lines) > 0 {
		whole := n == l.lines[0]
		for i := range l.lines {
			l.lines[i] -= n
		}
		if whole {
			l.lines = l.lines[:copy(l.lines, l.lines[1:])]
		}
	}
	l.in = l.in[:copy(l.in, l.in[n:])]
}

// takeOutput removes the first n output bytes, which the master has read.
func (l *ldisc) takeOutput(n int) { l.out = l.out[:copy(l.out, l.out[n:])] }
