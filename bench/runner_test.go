package bench

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// requireHost skips the test unless this machine can run containers the way
// the runner does.
func requireHost(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: native runs chroot, and the bundle is not a rootless one")
	}
	for _, tool := range []string{"runc", "gcc"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("needs %s in $PATH", tool)
		}
	}
	if err := checkStatic("/usr/bin/busybox"); err != nil {
		t.Skipf("needs a static busybox: %v", err)
	}
}

// testWriter sends progress lines to the test log.
type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(string(p[:len(p)-1]))
	return len(p), nil
}

// TestRunEndToEnd runs native and runc through two workloads, one of each
// kind, the micro one also beside a busy process, and checks the JSON
// report: its behaviour, not its timings.
func TestRunEndToEnd(t *testing.T) {
	requireHost(t)
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	all, err := DefaultRuntimes()
	if err != nil {
		t.Fatal(err)
	}
	runtimes, err := SelectRuntimes(all, []string{"native", "runc"})
	if err != nil {
		t.Fatal(err)
	}
	workloads, err := SelectWorkloads([]string{"run-true", "getppid"})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := Run(context.Background(), Config{
		Runtimes: runtimes, Workloads: workloads, Baseline: "runc", Runs: 2,
		Iterations: 100_000, Budget: 2 * time.Second, Timeout: time.Minute, Load: 1,
		Busybox: "/usr/bin/busybox", Progress: NewLineProgress(testWriter{t}),
		Reproduce: func(rt, w string) string { return "moat-bench --runtime " + rt + " --workload " + w },
	})
	if err != nil {
		t.Fatal(err)
	}
	if left, _ := os.ReadDir(tmp); len(left) > 0 {
		t.Errorf("the session left %v in $TMPDIR", left)
	}

	out := filepath.Join(t.TempDir(), "bench.json")
	if err := WriteJSON(out, rep); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var got Report
	if err := json.Unmarshal(data, &got); err != nil {
		t.Fatalf("the JSON does not read back: %v", err)
	}
	if got.Schema != Schema || len(got.Runtimes) != 2 || len(got.Workloads) != 3 {
		t.Fatalf("report has schema %q, %d runtimes, %d workloads; want %q, 2, 3", got.Schema, len(got.Runtimes), len(got.Workloads), Schema)
	}
	if names := []string{got.Workloads[0].Name, got.Workloads[1].Name, got.Workloads[2].Name}; names[1] != "getppid" || names[2] != "getppid@load1" {
		t.Errorf("workloads %v, want run-true, getppid, getppid@load1", names)
	}
	for _, wr := range got.Workloads {
		if wr.Status != StatusOK || len(wr.Results) != 2 {
			t.Errorf("%s: status %s (%s), %d results; want ok with 2", wr.Name, wr.Status, wr.Reason, len(wr.Results))
			continue
		}
		for _, r := range wr.Results {
			if r.Status != StatusOK || r.Summary == nil {
				t.Errorf("%s under %s: %s: %s", wr.Name, r.Runtime, r.Status, r.Reason)
				continue
			}
			if len(r.Samples) != 2 || r.Min <= 0 || r.Median < r.Min || r.Max < r.Median || r.Ratio <= 0 || r.Reproduce == "" {
				t.Errorf("%s under %s: samples %v, %+v, ratio %v, reproduce %q: want 2 positive samples, min <= median <= max, a ratio and a command",
					wr.Name, r.Runtime, r.Samples, *r.Summary, r.Ratio, r.Reproduce)
			}
		}
	}
}
