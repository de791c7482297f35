package main

// Status is how one test module or package ended in a run.
type Status string

// The statuses regrtest reports, in its words (Go's test binaries end in
// a subset of them), plus NotRun for a unit the run never reported (the
// whole run was stopped, or the runtime failed first).
const (
	Passed     Status = "passed"
	Failed     Status = "failed"
	EnvChanged Status = "env changed" // passed, but left threads, files or signal handlers behind
	Skipped    Status = "skipped"
	TimedOut   Status = "timed out"
	Crashed    Status = "crashed"
	NoTests    Status = "no tests"
	NotRun     Status = "not run"
)

// Good says whether a unit ended as it should: it passed, or it skipped
// because it does not apply here.
func (s Status) Good() bool { return s == Passed || s == Skipped || s == NoTests }

// Result is one unit's outcome: its status, the suite's words for it,
// and, for a suite that names them (Go's), the tests that failed.
type Result struct {
	Status  Status   `json:"status"`
	Detail  string   `json:"detail,omitempty"`
	Failing []string `json:"failing,omitempty"`
	// Cases counts the test cases of a suite that reports them (the
	// selftests' TAP lines).
	Cases *Cases `json:"cases,omitempty"`
}

// Cases counts a unit's test cases by how they ended.
type Cases struct {
	OK    int `json:"ok"`
	NotOK int `json:"not_ok"`
	Skip  int `json:"skip"`
}
