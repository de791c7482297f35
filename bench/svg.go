package bench

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
)

// Chart geometry, in SVG user units (pixels).
const (
	chartLeft   = 64 // room for the axis labels
	chartTop    = 84 // title, subtitle and legend
	chartBottom = 40 // workload names
	chartRight  = 16
	plotHeight  = 320
	barWidth    = 18
	barGap      = 4
	groupGap    = 28
)

// palette gives runtimes distinct colours that stay distinct to colour-blind
// readers (Okabe and Ito's set).
var palette = []string{"#E69F00", "#56B4E9", "#009E73", "#0072B2", "#D55E00", "#CC79A7", "#F0E442", "#999999"}

// WriteSVG writes a chart of rep to path: per workload a group of bars, one
// per runtime, each the runtime's median over the baseline's on a log scale,
// growing up from the baseline's 1x when slower and down when faster. Ratios
// put workloads of different units on one axis; the log scale keeps native's
// 0.05x and ptrace's 500x readable together.
func WriteSVG(path string, rep *Report) error {
	return os.WriteFile(path, renderSVG(rep), 0o644)
}

func renderSVG(rep *Report) []byte {
	var groups []WorkloadResult
	lo, hi := -1.0, 1.0 // decades shown, at least 0.1x to 10x
	for _, wr := range rep.Workloads {
		has := false
		for _, r := range wr.Results {
			if r.Ratio > 0 {
				has = true
				lo = math.Min(lo, math.Floor(math.Log10(r.Ratio)))
				hi = math.Max(hi, math.Ceil(math.Log10(r.Ratio)))
			}
		}
		if has {
			groups = append(groups, wr)
		}
	}
	// Bar slots for the runtimes that ran; a skipped one is in the legend
	// only. Colours follow the position in rep.Runtimes, so that a runtime
	// keeps its colour whichever others were skipped.
	var slots []int
	for i, rt := range rep.Runtimes {
		if rt.Status == StatusOK {
			slots = append(slots, i)
		}
	}
	n := len(slots)
	groupWidth := n*(barWidth+barGap) + groupGap
	width := chartLeft + max(len(groups)*groupWidth, 360) + chartRight
	height := chartTop + plotHeight + chartBottom
	y := func(ratio float64) float64 {
		return chartTop + plotHeight*(hi-math.Log10(ratio))/(hi-lo)
	}

	var b bytes.Buffer
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="11">`+"\n", width, height, width, height)
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="white"/>`+"\n", width, height)
	fmt.Fprintf(&b, `<text x="%d" y="18" font-size="14" font-weight="bold">%s</text>`+"\n", chartLeft,
		esc(fmt.Sprintf("Median relative to %s (log scale; lower is better)", rep.Baseline)))
	fmt.Fprintf(&b, `<text x="%d" y="34" fill="#555">%s</text>`+"\n", chartLeft,
		esc(fmt.Sprintf("%s, %d CPUs, Linux %s, %s", rep.Machine.CPU, rep.Machine.CPUs, rep.Machine.Kernel, rep.Date.Format("2006-01-02"))))

	// Legend: one swatch per runtime, in session order.
	x := chartLeft
	for i, rt := range rep.Runtimes {
		label := rt.Name
		if rt.Status != StatusOK {
			label += " (" + rt.Status + ")"
		}
		fmt.Fprintf(&b, `<rect x="%d" y="48" width="12" height="12" fill="%s"/><text x="%d" y="58">%s<title>%s</title></text>`+"\n",
			x, palette[i%len(palette)], x+16, esc(label), esc(rt.Reason))
		x += 16 + 7*len(label) + 16
	}

	// Decade grid, with the baseline's 1x drawn darker.
	for d := lo; d <= hi; d++ {
		ratio := math.Pow(10, d)
		stroke := "#ddd"
		if d == 0 {
			stroke = "#333"
		}
		fmt.Fprintf(&b, `<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="%s"/>`+"\n", chartLeft, width-chartRight, y(ratio), y(ratio), stroke)
		fmt.Fprintf(&b, `<text x="%d" y="%.1f" text-anchor="end">%sx</text>`+"\n", chartLeft-6, y(ratio)+4, strconv.FormatFloat(ratio, 'g', -1, 64))
	}

	for g, wr := range groups {
		left := chartLeft + g*groupWidth + groupGap/2
		for slot, i := range slots {
			r := wr.Results[i]
			cx := left + slot*(barWidth+barGap)
			mid := float64(cx) + barWidth/2
			if r.Ratio <= 0 {
				fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle" font-size="8" fill="#999">n/a<title>%s</title></text>`+"\n",
					mid, y(1)-3, esc(r.Runtime+": "+r.reason()))
				continue
			}
			top, bottom := math.Min(y(r.Ratio), y(1)), math.Max(y(r.Ratio), y(1))
			fmt.Fprintf(&b, `<rect x="%d" y="%.1f" width="%d" height="%.1f" fill="%s"><title>%s</title></rect>`+"\n",
				cx, top, barWidth, math.Max(bottom-top, 1.5), palette[i%len(palette)],
				esc(fmt.Sprintf("%s %s: median %s %s (%s)", r.Runtime, wr.Name, formatValue(r.Median), wr.Unit, r.Reading)))
			labelY := top - 3
			if r.Ratio < 1 {
				labelY = bottom + 10
			}
			fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle" font-size="9">%s</text>`+"\n", mid, labelY, esc(formatRatio(r.Ratio)))
		}
		fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="middle">%s</text>`+"\n",
			left+n*(barWidth+barGap)/2, chartTop+plotHeight+24, esc(wr.Name))
	}
	if len(groups) == 0 {
		fmt.Fprintf(&b, `<text x="%d" y="%.1f" fill="#999">%s</text>`+"\n", chartLeft+8, y(1)-8,
			esc("no workload has a figure for "+rep.Baseline+" and another runtime"))
	}
	b.WriteString("</svg>\n")
	return b.Bytes()
}

// esc makes s safe as SVG text or attribute content.
func esc(s string) string {
	var b strings.Builder
	xml.EscapeText(&b, []byte(s))
	return b.String()
}
