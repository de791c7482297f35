package main

import (
	"fmt"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// parseSignal reads a signal as `kill` takes it: a name with or without the
// SIG prefix in any case (KILL, sigkill) or a number (9).
func parseSignal(s string) (unix.Signal, error) {
	if n, err := strconv.Atoi(s); err == nil {
		// 0 checks that the container exists, as kill(2) does.
		if n < 0 || n > maxSignal {
			return 0, fmt.Errorf("unknown signal %q", s)
		}
		return unix.Signal(n), nil
	}
	name := strings.ToUpper(s)
	if !strings.HasPrefix(name, "SIG") {
		name = "SIG" + name
	}
	if sig := unix.SignalNum(name); sig != 0 {
		return sig, nil
	}
	return 0, fmt.Errorf("unknown signal %q", s)
}

// maxSignal is the highest Linux signal number (SIGRTMAX).
const maxSignal = 64
