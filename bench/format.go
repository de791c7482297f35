package bench

import (
	"strconv"
	"strings"
)

// formatValue spells a figure with the precision the runs support (three
// significant digits, give or take) and thousands separators for the large
// ones, so that 55123.4 reads as 55,123 and 0.734 as 0.73.
func formatValue(v float64) string {
	switch {
	case v >= 100:
		return groupThousands(strconv.FormatFloat(v, 'f', 0, 64))
	case v >= 10:
		return strconv.FormatFloat(v, 'f', 1, 64)
	case v >= 1:
		return strconv.FormatFloat(v, 'f', 2, 64)
	default:
		return strconv.FormatFloat(v, 'g', 2, 64)
	}
}

func groupThousands(digits string) string {
	var b strings.Builder
	for i, c := range digits {
		if i > 0 && (len(digits)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

// reason is what a report shows for a result that has no figure.
func (r Result) reason() string {
	return r.Status + ": " + r.Reason
}
