package bench

import (
	"slices"
	"testing"
)

func TestSummarize(t *testing.T) {
	for _, tc := range []struct {
		samples []float64
		want    Summary
	}{
		{[]float64{7}, Summary{Median: 7, Min: 7, Max: 7}},
		{[]float64{3, 1, 2}, Summary{Median: 2, Min: 1, Max: 3}},
		{[]float64{4, 1, 3, 2}, Summary{Median: 2.5, Min: 1, Max: 4}},
		// One stalled run moves the maximum, not the median.
		{[]float64{10, 11, 900, 10, 12}, Summary{Median: 11, Min: 10, Max: 900}},
	} {
		in := slices.Clone(tc.samples)
		if got := Summarize(in); got != tc.want {
			t.Errorf("Summarize(%v) = %+v, want %+v", tc.samples, got, tc.want)
		}
		if !slices.Equal(in, tc.samples) {
			t.Errorf("Summarize(%v) reordered its input to %v; samples are kept in run order", tc.samples, in)
		}
	}
}

func TestRatio(t *testing.T) {
	if r, ok := Ratio(39, 30); !ok || r != 1.3 {
		t.Errorf("Ratio(39, 30) = %v, %v; want 1.3, true", r, ok)
	}
	for _, tc := range [][2]float64{{1, 0}, {0, 1}, {-1, 2}} {
		if _, ok := Ratio(tc[0], tc[1]); ok {
			t.Errorf("Ratio(%v, %v) claims a ratio", tc[0], tc[1])
		}
	}
}

func TestReading(t *testing.T) {
	for _, tc := range []struct {
		ratio float64
		want  string
	}{
		{1.3, "moat/runc 1.3x"},
		{1, "moat/runc 1.0x"},
		{12.4, "moat/runc 12x"},
		{561.7, "moat/runc 562x"},
		{0.054, "moat/runc 0.054x"},
		{0.5, "moat/runc 0.5x"},
		{0.997, "moat/runc 1.0x"},
	} {
		if got := Reading("moat", "runc", tc.ratio); got != tc.want {
			t.Errorf("Reading(%v) = %q, want %q", tc.ratio, got, tc.want)
		}
	}
}

func TestFormatValue(t *testing.T) {
	for _, tc := range []struct {
		v    float64
		want string
	}{
		{55123.4, "55,123"},
		{1234567, "1,234,567"},
		{123.6, "124"},
		{30.74, "30.7"},
		{4.2, "4.20"},
		{0.734, "0.73"},
	} {
		if got := formatValue(tc.v); got != tc.want {
			t.Errorf("formatValue(%v) = %q, want %q", tc.v, got, tc.want)
		}
	}
}
