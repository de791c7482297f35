package conformance

import (
	"fmt"
	"strings"
)

// Status is the verdict on one program or check.
type Status string

const (
	Pass Status = "PASS"
	Fail Status = "FAIL"
	// Broken: the program fails natively, so the suite itself is wrong.
	// It counts as failed.
	Broken Status = "BROKEN"
	Skip   Status = "SKIP"
)

// Result is the verdict on one conformance program or real program check.
type Result struct {
	Name      string   `json:"name"` // "family/topic"
	Status    Status   `json:"status"`
	Reason    string   `json:"reason,omitempty"` // first failure line, or why skipped
	Covers    []string `json:"covers,omitempty"` // conformance programs only
	Args      []string `json:"args,omitempty"`   // real program checks only
	Native    *Outcome `json:"native,omitempty"`
	Runtime   *Outcome `json:"runtime,omitempty"`
	Reference *Outcome `json:"reference,omitempty"` // real program checks only
}

// Family is the part of the name before the '/'.
func (r *Result) Family() string {
	family, _, _ := strings.Cut(r.Name, "/")
	return family
}

// Line is the result's line in the runner's output: "PASS name  12ms",
// "FAIL name: reason", "BROKEN name: reason" or "SKIP name: reason".
func (r *Result) Line() string {
	if r.Status != Pass {
		return fmt.Sprintf("%s %s: %s", r.Status, r.Name, r.Reason)
	}
	o := r.Runtime
	if o == nil {
		o = r.Native
	}
	return fmt.Sprintf("%s %s  %.0fms", r.Status, r.Name, o.DurationMS)
}
