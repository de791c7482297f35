package bench

import (
	"fmt"
	"math"
	"slices"
)

// Summary is how the samples of one runtime on one workload are reported.
// The median, not the mean: on a shared machine one run in twenty may stall
// on another process, and that run must not move the figure.
type Summary struct {
	Median float64 `json:"median"`
	Min    float64 `json:"min"`
	Max    float64 `json:"max"`
}

// Summarize returns the median, minimum and maximum of samples, which must
// not be empty. With an even count the median is the mean of the middle two.
func Summarize(samples []float64) Summary {
	s := slices.Clone(samples)
	slices.Sort(s)
	n := len(s)
	median := s[n/2]
	if n%2 == 0 {
		median = (s[n/2-1] + s[n/2]) / 2
	}
	return Summary{Median: median, Min: s[0], Max: s[n-1]}
}

// Ratio returns value/baseline, and false when there is no meaningful ratio.
func Ratio(value, baseline float64) (float64, bool) {
	if !(baseline > 0) || !(value > 0) {
		return 0, false
	}
	return value / baseline, true
}

// Reading spells a ratio as people say it: "moat/runc 1.3x".
func Reading(name, baseline string, ratio float64) string {
	return fmt.Sprintf("%s/%s %sx", name, baseline, formatRatio(ratio))
}

// formatRatio gives a ratio two significant digits at most (none after the
// point from 10 up): the runs are not more precise than that.
func formatRatio(ratio float64) string {
	switch {
	case ratio >= 10:
		return fmt.Sprintf("%.0f", ratio)
	case ratio >= 1:
		return fmt.Sprintf("%.1f", ratio)
	default:
		if s := fmt.Sprintf("%.2g", ratio); s != "1" { // 0.997 rounds up to 1
			return s
		}
		return "1.0"
	}
}

// Percentile returns the p-th percentile of samples, which must not be
// empty, by the nearest rank: the smallest sample that at least p percent
// of the samples do not exceed. It is always one of the samples, and the
// 100th is the largest.
func Percentile(samples []float64, p float64) float64 {
	s := slices.Clone(samples)
	slices.Sort(s)
	rank := int(math.Ceil(p / 100 * float64(len(s))))
	return s[min(max(rank, 1), len(s))-1]
}
