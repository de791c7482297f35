package main

import (
	"bufio"
	"io"
	"strconv"
	"strings"
)

// framedItem is what a suite's parser reads of one item of its script's
// output (a Go package, a kselftest program): the lines between the item's
// goBegin and goEnd lines, then its exit status.
type framedItem interface {
	read(line string)
	end(exit int)
	result() Result
}

// exitStatus is how an item's goEnd line ended it: finished once the line
// was read, with the exit status it carried.
type exitStatus struct {
	finished bool
	exit     int
}

func (e *exitStatus) end(exit int) { e.finished, e.exit = true, exit }

// readFramed reads a suite script's output and returns the result of each
// item it began, newItem making the reader of each. An item's goEnd line
// may follow output that did not end its line (a program killed
// mid-line, timers' nsleep-lat); an item the output ends inside is
// unfinished.
func readFramed(r io.Reader, newItem func() framedItem) map[string]Result {
	results := map[string]Result{}
	var name string
	var cur framedItem
	end := func() {
		if cur != nil {
			results[name] = cur.result()
		}
		cur = nil
	}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	for sc.Scan() {
		line := sc.Text()
		if rest, ok := strings.CutPrefix(line, goBegin+" "); ok {
			end()
			name, cur = rest, newItem()
			continue
		}
		if cur == nil {
			continue
		}
		if i := strings.Index(line, goEnd+" "); i >= 0 {
			if i > 0 {
				cur.read(line[:i])
			}
			if item, code, ok := strings.Cut(line[i+len(goEnd)+1:], " "); ok && item == name {
				exit, _ := strconv.Atoi(code)
				cur.end(exit)
				end()
			}
			continue
		}
		cur.read(line)
	}
	end()
	return results
}
