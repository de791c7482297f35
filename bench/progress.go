package bench

import (
	"fmt"
	"io"
	"os"
	"strings"
)

// Progress is told how a session advances. On a terminal it draws a bar;
// elsewhere (make, CI logs) it writes one plain line per run.
type Progress interface {
	Start(total int)                 // total runs, warm-ups included
	Advance(n int, what string)      // n runs done; what the last one was
	Note(format string, args ...any) // a line that stays: a skip, a failure
	Done()
}

// NewProgress returns a bar when f is a terminal and plain lines otherwise.
func NewProgress(f *os.File) Progress {
	if info, err := f.Stat(); err == nil && info.Mode()&os.ModeCharDevice != 0 && os.Getenv("TERM") != "dumb" {
		return &barProgress{w: f}
	}
	return NewLineProgress(f)
}

// NewLineProgress returns a Progress that writes plain lines to w.
func NewLineProgress(w io.Writer) Progress {
	return &lineProgress{w: w}
}

type lineProgress struct {
	w           io.Writer
	total, done int
}

func (p *lineProgress) Start(total int) { p.total = total }

func (p *lineProgress) Advance(n int, what string) {
	p.done += n
	fmt.Fprintf(p.w, "[%d/%d] %s\n", p.done, p.total, what)
}

func (p *lineProgress) Note(format string, args ...any) {
	fmt.Fprintf(p.w, format+"\n", args...)
}

func (p *lineProgress) Done() {}

// progressWidth is the bar's length in cells; with the counts and the last run's
// description the line stays within 80 columns.
const progressWidth = 24

type barProgress struct {
	w           io.Writer
	total, done int
	last        string
}

func (p *barProgress) Start(total int) { p.total = total; p.draw() }

func (p *barProgress) Advance(n int, what string) {
	p.done += n
	p.last = what
	p.draw()
}

func (p *barProgress) Note(format string, args ...any) {
	fmt.Fprintf(p.w, "\r\033[K"+format+"\n", args...)
	if p.total > 0 {
		p.draw()
	}
}

func (p *barProgress) Done() { fmt.Fprint(p.w, "\r\033[K") }

func (p *barProgress) draw() {
	filled := 0
	if p.total > 0 {
		filled = progressWidth * p.done / p.total
	}
	last := p.last
	if len(last) > 40 {
		last = last[:40]
	}
	fmt.Fprintf(p.w, "\r\033[K[%s%s] %d/%d %s",
		strings.Repeat("#", filled), strings.Repeat(".", progressWidth-filled), p.done, p.total, last)
}
