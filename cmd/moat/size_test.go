package main

import "testing"

func TestSizesTakeRuncsSuffixesAndRefuseWhatDoesNotFit(t *testing.T) {
	for s, want := range map[string]int64{"512": 512, "1k": 1 << 10, "1KB": 1 << 10, "64m": 64 << 20, "2G": 2 << 30, "10b": 10, "-1": -1} {
		if got, err := parseSize(s); err != nil || got != want {
			t.Errorf("parseSize(%q) = %d, %v; want %d", s, got, err, want)
		}
	}
	for _, s := range []string{"", "k", "1x", "-2", "9999999999g", "1.5g"} {
		if got, err := parseSize(s); err == nil {
			t.Errorf("parseSize(%q) = %d, want an error", s, got)
		}
	}
	for _, s := range []string{"0", "-1", "0m"} {
		if _, err := parseBytes(s); err == nil {
			t.Errorf("parseBytes(%q): no error, want a positive size", s)
		}
	}
}
