package main

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// sizeSuffixes are the byte counts' suffixes, binary multiples, as runc's
// update and docker's --memory take them (either case).
var sizeSuffixes = []struct {
	s     string
	shift uint
}{{"kb", 10}, {"mb", 20}, {"gb", 30}, {"k", 10}, {"m", 20}, {"g", 30}, {"b", 0}}

// parseSize reads a byte count with an optional k, m, g (or kb, mb, gb,
// b) suffix; -1 is runc update's "no limit".
func parseSize(s string) (int64, error) {
	if s == "-1" {
		return -1, nil
	}
	num, shift := strings.ToLower(strings.TrimSpace(s)), uint(0)
	for _, suf := range sizeSuffixes {
		if len(num) > len(suf.s) && strings.HasSuffix(num, suf.s) {
			num, shift = num[:len(num)-len(suf.s)], suf.shift
			break
		}
	}
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil || n < 0 || n > math.MaxInt64>>shift {
		return 0, fmt.Errorf("invalid size %q", s)
	}
	return n << shift, nil
}

// parseBytes reads a positive byte count, as parseSize does, for the
// limits moat sandbox and moat serve take.
func parseBytes(v string) (int64, error) {
	n, err := parseSize(v)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("%q: want a positive number of bytes, with an optional k, m or g suffix", v)
	}
	return n, nil
}
