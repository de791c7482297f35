package main

import (
	"flag"
	"slices"
	"strings"
)

// reproducer returns the function that spells, for each figure, the
// moat-bench command that measures it again: the same binary, the same
// figure-changing flags as this session, restricted to one workload and to
// the runtime with the baseline its ratio needs.
func reproducer(self string, fs *flag.FlagSet, baseline string) func(runtime, workload string) string {
	var common []string
	fs.Visit(func(f *flag.Flag) {
		if slices.Contains(figureFlags, f.Name) {
			common = append(common, "--"+f.Name, quote(f.Value.String()))
		}
	})
	return func(runtime, workload string) string {
		runtimes := runtime
		if runtime != baseline {
			runtimes = baseline + "," + runtime
		}
		args := append([]string{quote(self), "--runtime", runtimes, "--workload", workload}, common...)
		return strings.Join(args, " ")
	}
}

// quote makes s one shell word.
func quote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./,:=+") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
