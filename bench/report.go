package bench

import (
	"encoding/json"
	"os"
	"time"
)

// Schema names the version of the JSON report; it changes when a field
// changes meaning or goes away.
const Schema = "moat-bench/1"

// Statuses of a runtime, a workload or a result.
const (
	StatusOK      = "ok"
	StatusSkipped = "skipped" // not run, for the reason given: a missing binary or tool
	StatusFailed  = "failed"  // run, and failed: a non-zero exit, a timeout, no RESULT line
)

// Report is everything one session measured; it is the JSON output, and the
// Markdown and SVG are drawn from it.
type Report struct {
	Schema    string           `json:"schema"`
	Date      time.Time        `json:"date"`
	Machine   Machine          `json:"machine"`
	Rootfs    string           `json:"rootfs"` // what the bundle's rootfs was made from
	Baseline  string           `json:"baseline"`
	BudgetMS  int64            `json:"budget_ms"` // a micro workload stops early after this long
	Runtimes  []RuntimeInfo    `json:"runtimes"`
	Workloads []WorkloadResult `json:"workloads"`
}

// RuntimeInfo is a runtime as this session found it.
type RuntimeInfo struct {
	Name    string   `json:"name"`
	Kind    string   `json:"kind"`
	Binary  string   `json:"binary,omitempty"` // resolved path
	Args    []string `json:"args,omitempty"`
	Version string   `json:"version,omitempty"` // first line of `BINARY --version`; the kernel for native
	Note    string   `json:"note,omitempty"`
	Status  string   `json:"status"` // ok or skipped
	Reason  string   `json:"reason,omitempty"`
	Serves  bool     `json:"serves,omitempty"` // it runs the serve workloads
	// Command is how each run invoked the runtime, with the per-session
	// directories and the per-run container id as placeholders.
	Command string `json:"command,omitempty"`
}

// WorkloadResult is one workload under every runtime of the session.
type WorkloadResult struct {
	Name    string   `json:"name"`
	Kind    Kind     `json:"kind"`
	What    string   `json:"what"`
	Unit    string   `json:"unit"`
	Argv    []string `json:"argv,omitempty"` // the process every runtime ran
	Runs    int      `json:"runs"`           // per runtime, after one warm-up run
	Status  string   `json:"status"`         // ok or skipped
	Reason  string   `json:"reason,omitempty"`
	Results []Result `json:"results,omitempty"` // one per runtime, in session order
}

// Result is one runtime on one workload.
type Result struct {
	Runtime string    `json:"runtime"`
	Status  string    `json:"status"`
	Reason  string    `json:"reason,omitempty"`
	Samples []float64 `json:"samples,omitempty"` // in the workload's unit, in run order
	*Summary
	Ratio   float64 `json:"ratio,omitempty"`   // median over the baseline's median
	Reading string  `json:"reading,omitempty"` // the ratio in words: "moat/runc 1.3x"
	// Reproduce is the moat-bench command that measures this figure again.
	Reproduce string `json:"reproduce,omitempty"`
	// Cells are a serve workload's figures, one per ServeCells entry;
	// such a result has no Samples or Summary of its own.
	Cells []CellResult `json:"cells,omitempty"`
	// Density is a density workload's figures, one cell per number of
	// sandboxes.
	Density []DensityCell `json:"density,omitempty"`
	// Fairness is a fairness workload's figures.
	Fairness *FairnessCell `json:"fairness,omitempty"`
}

// WriteJSON writes rep to path.
func WriteJSON(path string, rep *Report) error {
	data, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(data, '\n'), 0o644)
}
