package ocirun

import (
	"os"
	"strconv"
	"strings"
)

// Alive reports whether process pid runs: it exists and is not a zombie,
// which holds nothing but its pid. It is how a caller sees that what a run
// started is gone.
func Alive(pid int) bool {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	// The state follows the command name, which is in parentheses and may
	// itself contain ") " (proc_pid_stat(5)).
	s := string(stat)
	i := strings.LastIndex(s, ") ")
	return i < 0 || i+2 >= len(s) || s[i+2] != 'Z'
}
