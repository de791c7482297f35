package bench

import (
	"bytes"
	"encoding/xml"
	"io"
	"strings"
	"testing"
	"time"
)

// fixedReport has one measured workload, with a skipped and a failed runtime
// beside two that ran, and one skipped workload.
func fixedReport() *Report {
	return &Report{
		Schema: Schema, Date: time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC),
		Machine:  Machine{CPU: "AMD EPYC", CPUs: 2, Kernel: "6.18", LoadBefore: "0.1 0.1 0.1", LoadAfter: "0.2 0.1 0.1"},
		Rootfs:   "busybox /usr/bin/busybox",
		Baseline: "runc", BudgetMS: 2000,
		Runtimes: []RuntimeInfo{
			{Name: "runc", Kind: KindOCI, Status: StatusOK, Command: "runc --root STATE run --bundle BUNDLE ID"},
			{Name: "moat", Kind: KindOCI, Status: StatusOK},
			{Name: "runsc", Kind: KindOCI, Status: StatusSkipped, Reason: "bin/runsc not found"},
			{Name: "native", Kind: KindNative, Status: StatusOK},
		},
		Workloads: []WorkloadResult{
			{
				Name: "getppid", Kind: Micro, What: "system call round trip", Unit: "ns/op", Runs: 3, Status: StatusOK,
				Argv: []string{"/bench/getppid", "1000000", "2000"},
				Results: []Result{
					{Runtime: "runc", Status: StatusOK, Samples: []float64{100, 98, 102}, Summary: &Summary{100, 98, 102}, Ratio: 1, Reading: "baseline", Reproduce: "bin/moat-bench --runtime runc --workload getppid"},
					{Runtime: "moat", Status: StatusOK, Samples: []float64{1300, 1250, 1400}, Summary: &Summary{1300, 1250, 1400}, Ratio: 13, Reading: "moat/runc 13x"},
					{Runtime: "runsc", Status: StatusSkipped, Reason: "bin/runsc not found"},
					{Runtime: "native", Status: StatusFailed, Reason: "exit status 1: a | b"},
				},
			},
			{Name: "python3-pass", Kind: Wall, What: "python3 start-up", Unit: "ms", Runs: 20, Status: StatusSkipped, Reason: "needs /usr/bin/python3"},
		},
	}
}

func TestMarkdown(t *testing.T) {
	var b bytes.Buffer
	writeMarkdown(&b, fixedReport(), "benchmarks.svg")
	md := b.String()
	for _, want := range []string{
		"AMD EPYC (2 CPUs), Linux 6.18",
		"![Medians relative to runc, log scale](benchmarks.svg)",
		"| moat | 1,300 | 1,250 | 1,400 | moat/runc 13x |  |",
		"| runc | 100 | 98.0 | 102 | baseline | `bin/moat-bench --runtime runc --workload getppid` |",
		"| runsc |  | skipped: bin/runsc not found |", // the reason, once, in the runtimes table
		"| runsc | skipped (see Runtimes) |",
		`failed: exit status 1: a \| b`, // a pipe must not split the cell
		"Skipped: needs /usr/bin/python3.",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("Markdown lacks %q:\n%s", want, md)
		}
	}
}

func TestSVG(t *testing.T) {
	svg := renderSVG(fixedReport())
	dec := xml.NewDecoder(bytes.NewReader(svg))
	bars := 0
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("the SVG is not well-formed XML: %v\n%s", err, svg)
		}
		if el, ok := tok.(xml.StartElement); ok && el.Name.Local == "rect" {
			for _, a := range el.Attr {
				if a.Name.Local == "width" && a.Value == "18" {
					bars++
				}
			}
		}
	}
	// runc and moat have ratios; native failed and is marked n/a; runsc,
	// skipped for the session, has no slot.
	if bars != 2 {
		t.Errorf("the SVG has %d bars, want 2:\n%s", bars, svg)
	}
	if got := bytes.Count(svg, []byte(">n/a<")); got != 1 {
		t.Errorf("the SVG has %d n/a slots, want 1 (native)", got)
	}
	for _, want := range []string{">13<", ">0.1x<", ">1x<", ">10x<", "moat getppid: median 1,300 ns/op", "runsc (skipped)"} {
		if !bytes.Contains(svg, []byte(want)) {
			t.Errorf("the SVG lacks %q", want)
		}
	}
}

func TestSummary(t *testing.T) {
	var b bytes.Buffer
	if err := WriteSummary(&b, fixedReport()); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"moat", "1,300", "moat/runc 13x", "skipped: needs /usr/bin/python3"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("summary lacks %q:\n%s", want, b.String())
		}
	}
}
