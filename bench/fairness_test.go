package bench

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	specs "github.com/opencontainers/runtime-spec/specs-go"
)

func TestEveryFairnessSandboxHasThePlatformsLimits(t *testing.T) {
	spec := fairnessSpec([]string{"/bin/true"}, "/data", "moat-bench-1-7")
	r := spec.Linux.Resources
	if r == nil || r.Memory == nil || r.Pids == nil || r.CPU == nil {
		t.Fatalf("resources = %+v, want memory, pids and cpu", r)
	}
	if *r.Memory.Limit != 256<<20 || *r.Memory.Swap != 256<<20 {
		t.Errorf("memory %d swap %d, want 256 MiB both (memory+swap equal: no swap)", *r.Memory.Limit, *r.Memory.Swap)
	}
	if *r.Pids.Limit != 128 {
		t.Errorf("pids %d, want 128", *r.Pids.Limit)
	}
	if *r.CPU.Quota != 100_000 || *r.CPU.Period != 100_000 {
		t.Errorf("cpu quota %d period %d, want one CPU", *r.CPU.Quota, *r.CPU.Period)
	}
	if spec.Linux.CgroupsPath != "/moat-bench-1-7" || !spec.Root.Readonly || spec.Process.Args[0] != "/bin/true" {
		t.Errorf("cgroupsPath %q, read-only %v, args %v: want the bench's spec in cgroup /ID", spec.Linux.CgroupsPath, spec.Root.Readonly, spec.Process.Args)
	}
	// Each sandbox gets limits of its own: changing one changes no other.
	*r.Pids.Limit = 1
	if *fairnessResources().Pids.Limit != 128 {
		t.Error("fairnessResources shares its values between sandboxes")
	}
}

func TestNeighboursRunUnderAShellLoopThatRestartsThem(t *testing.T) {
	ns := neighbours(4)
	want := map[string]string{
		memoryBomb: "while :; do /bench/neighbour memory 1024; done",
		forkBomb:   "while :; do /bench/neighbour fork; done",
		cpuHog:     "while :; do /bench/neighbour cpu 4; done", // a thread per host CPU
	}
	if len(ns) != len(want) {
		t.Fatalf("neighbours = %v, want %d", ns, len(want))
	}
	for _, n := range ns {
		if len(n.Argv) != 3 || n.Argv[0] != "/bin/sh" || n.Argv[1] != "-c" || n.Argv[2] != want[n.Name] {
			t.Errorf("%s: argv %q, want sh -c %q", n.Name, n.Argv, want[n.Name])
		}
	}
	// The ceiling only a broken limit lets the bomb reach.
	if memoryCeilingMiB<<20 <= fairnessMemory+memoryAbortSlack {
		t.Errorf("ceiling %d MiB is not above the abort point", memoryCeilingMiB)
	}
}

func TestFairnessCellRatioIsNoisyOverQuietThroughput(t *testing.T) {
	// 10, 20 and 40 ms per run: 100, 50 and 25 runs/s, median 50; noisy 25.
	fc := FairnessCell{QuietMS: []float64{40, 10, 20}, NoisyMS: []float64{40, 20, 80, 100, 30},
		QuietRoundCPUs: []float64{0.9, 1, 0.8}, NoisyRoundCPUs: []float64{0.4, 0.5}}
	fc.summarize()
	if fc.Quiet != 50 || fc.Noisy != 25 {
		t.Errorf("quiet %v noisy %v runs/s, want 50 and 25 (medians of 1000/ms)", fc.Quiet, fc.Noisy)
	}
	if fc.Ratio != 0.5 || !fc.Meets {
		t.Errorf("ratio %v meets %v, want 0.5, which meets the bar", fc.Ratio, fc.Meets)
	}
	if fc.QuietCPUs != 0.9 || fc.NoisyCPUs != 0.45 {
		t.Errorf("CPUs %v and %v, want the medians 0.9 and 0.45", fc.QuietCPUs, fc.NoisyCPUs)
	}
	slow := FairnessCell{QuietMS: []float64{10}, NoisyMS: []float64{21}}
	slow.summarize()
	if slow.Meets || slow.Ratio >= 0.5 {
		t.Errorf("10 vs 21 ms per run: ratio %v meets %v, want below the bar", slow.Ratio, slow.Meets)
	}
	none := FairnessCell{QuietMS: []float64{10}}
	none.summarize()
	if none.Meets || none.Ratio != 0 {
		t.Errorf("no noisy rounds: ratio %v meets %v, want none", none.Ratio, none.Meets)
	}
}

// fakeHierarchy is a cgroup hierarchy in a directory with cgroup path
// holding files.
func fakeHierarchy(t *testing.T, path string, files map[string]string) cgroupHierarchy {
	t.Helper()
	h := cgroupHierarchy{mountpoint: t.TempDir(), root: "/"}
	writeCgroupFiles(t, h, path, files)
	return h
}

func writeCgroupFiles(t *testing.T, h cgroupHierarchy, path string, files map[string]string) {
	t.Helper()
	if err := os.MkdirAll(h.dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	// Each file is replaced whole (a write and a rename), as a cgroup
	// file reads: the watch may read it at any moment, and a file
	// rewritten in place reads empty between its truncation and its write.
	for name, data := range files {
		tmp := filepath.Join(h.dir(path), "."+name+".new")
		if err := os.WriteFile(tmp, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, filepath.Join(h.dir(path), name)); err != nil {
			t.Fatal(err)
		}
	}
}

func TestTheWatchKeepsPeaksAndAbortsAboveTheLimit(t *testing.T) {
	h := fakeHierarchy(t, "/a", map[string]string{"memory.usage_in_bytes": "1048576\n", "pids.current": "7\n"})
	ctx, abort := context.WithCancelCause(context.Background())
	// /gone has no cgroup: a neighbour not started yet, or whose sandbox died.
	w := watchNeighbours(memoryCgroup{h}, h, []string{"/a", "/gone"}, abort)
	time.Sleep(3 * watchInterval)
	writeCgroupFiles(t, h, "/a", map[string]string{"memory.usage_in_bytes": "3145728\n", "pids.current": "3\n"})
	time.Sleep(3 * watchInterval)
	if ctx.Err() != nil {
		t.Fatalf("aborted under the limit: %v", context.Cause(ctx))
	}
	writeCgroupFiles(t, h, "/a", map[string]string{"memory.usage_in_bytes": "1073741824\n"})
	select {
	case <-ctx.Done():
	case <-time.After(2 * time.Second):
		t.Fatal("a neighbour charged 1 GiB against a 256 MiB limit was not aborted")
	}
	if c := context.Cause(ctx); !strings.Contains(c.Error(), "1024 MiB, above its limit of 256 MiB") {
		t.Errorf("cause %q", c)
	}
	mem, pids := w.finish()
	if mem[0] != 1<<30 || pids[0] != 7 || mem[1] != 0 || pids[1] != 0 {
		t.Errorf("peaks memory %v pids %v, want 1 GiB and 7 for /a, nothing for /gone", mem, pids)
	}
	w.finish() // a second finish, as the cell's deferred one, returns at once
}

func TestCPUTimeOnV1AndV2(t *testing.T) {
	v1 := fakeHierarchy(t, "/a", map[string]string{"cpuacct.usage": "1500000000\n"})
	if got, err := cpuTime(v1, "/a"); err != nil || got != 1500*time.Millisecond {
		t.Errorf("v1 cpuTime = %v, %v; want 1.5s", got, err)
	}
	v2 := fakeHierarchy(t, "/a", map[string]string{"cpu.stat": "usage_usec 2500000\nuser_usec 2000000\nsystem_usec 500000\n"})
	v2.v2 = true
	if got, err := cpuTime(v2, "/a"); err != nil || got != 2500*time.Millisecond {
		t.Errorf("v2 cpuTime = %v, %v; want 2.5s", got, err)
	}
	if _, err := parseCPUStat("cpu.stat", bufio.NewScanner(strings.NewReader("user_usec 1\n"))); err == nil {
		t.Error("a cpu.stat without usage_usec gave no error")
	}
	if _, err := cpuTime(v1, "/gone"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a cgroup that is gone: %v, want ErrNotExist", err)
	}
}

func fairnessReport() *Report {
	running, stopped := string(specs.StateRunning), string(specs.StateStopped)
	return &Report{
		BudgetMS: 2000, Machine: Machine{CPUs: 2},
		Runtimes: []RuntimeInfo{{Name: "runc", Status: StatusOK}, {Name: "moat", Status: StatusOK},
			{Name: "runsc", Status: StatusOK}, {Name: "bwrap", Status: StatusOK}},
		Workloads: []WorkloadResult{{Name: "noisy-neighbours", Kind: Fairness, Unit: "runs/s", Runs: 5,
			Argv: []string{"/usr/bin/python3", "-c", "pass"}, Status: StatusOK, Results: []Result{
				{Runtime: "runc", Status: StatusOK, Reproduce: "moat-bench --runtime runc --workload noisy-neighbours",
					Fairness: &FairnessCell{Status: StatusOK, Quiet: 72.5, Noisy: 47.7, Ratio: 0.658, Meets: true, QuietCPUs: 0.83, NoisyCPUs: 0.49,
						Neighbours: []NeighbourStats{
							{Name: memoryBomb, Starts: 33, PeakMemoryMiB: 256, PeakPids: 5, CPUs: 0.34, End: running},
							{Name: forkBomb, Starts: 1, PeakMemoryMiB: 41.8, PeakPids: 128, CPUs: 0.52, End: running},
							{Name: cpuHog, Starts: 1, PeakMemoryMiB: 1.64, PeakPids: 5, CPUs: 0.52, End: running},
						}}},
				{Runtime: "moat", Status: StatusOK, Fairness: &FairnessCell{Status: StatusFailed, Reason: "memory bomb: not killed | at its limit"}},
				{Runtime: "runsc", Status: StatusOK, Fairness: &FairnessCell{Status: StatusOK, Quiet: 28.5, Noisy: 31.3, Ratio: 1.1, Meets: true,
					Neighbours: []NeighbourStats{{Name: memoryBomb, End: stopped, Stderr: "sentry: out of memory | killed"}, {Name: cpuHog, End: running}}}},
				{Runtime: "bwrap", Status: StatusSkipped, Reason: notRunReason(KindCommand, Fairness)},
			}}},
	}
}

func TestMarkdownShowsTheFairnessRatiosAndWhatTheNeighboursDid(t *testing.T) {
	var b bytes.Buffer
	writeMarkdown(&b, fairnessReport(), "")
	md := b.String()
	for _, want := range []string{
		"runs `/usr/bin/python3 -c pass` over and over for 2000 ms a round",
		"memory 256 MiB with memory+swap the same (no swap), pids 128, CPU quota\n100000 us per 100000 us period",
		"(2 spinning threads, as many as",
		"| runc | 72.5 | 47.7 | 0.66 | yes | 0.83 | 0.49 | 3 of 3 | `moat-bench --runtime runc --workload noisy-neighbours` |",
		`| moat | failed: memory bomb: not killed \| at its limit | | | | | | |  |`,
		"| runsc | 28.5 | 31.3 | 1.10 | yes | 0 | 0 | 1 of 2 |",
		"| bwrap | skipped: the neighbours are sandboxes started through an OCI runtime's",
		"| runc | memory bomb | 33 | 256 | 5 | 0.34 | running |",
		"| runc | fork bomb | 1 | 41.8 | 128 | 0.52 | running |",
		`| runsc | memory bomb | 0 | 0 | 0 | 0 | stopped: sentry: out of memory \| killed |`,
	} {
		if !strings.Contains(md, want) {
			t.Errorf("Markdown lacks %q:\n%s", want, md)
		}
	}
}

func TestSummaryShowsTheFairnessRatios(t *testing.T) {
	var b bytes.Buffer
	if err := WriteSummary(&b, fairnessReport()); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"noisy/quiet", "72.5       47.7        0.66  at least 0.5: yes; beside 3 of 3",
		"moat         failed: memory bomb", "beside 1 of 2", "bwrap        skipped: the neighbours"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("summary lacks %q:\n%s", want, b.String())
		}
	}
}

func TestFairnessRunsUnderOCIRuntimesAlone(t *testing.T) {
	if !runsWorkload(KindOCI, false, Fairness) || runsWorkload(KindCommand, false, Fairness) || runsWorkload(KindNative, false, Fairness) {
		t.Error("a fairness workload starts sandboxes through an OCI runtime's CLI, and nothing else")
	}
}

func TestAWorkloadNeedsItsHelpers(t *testing.T) {
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "bench"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "bench/repeat"), nil, 0o755); err != nil {
		t.Fatal(err)
	}
	w := Workload{Program: "repeat", Helpers: []string{"neighbour"}}
	if got, err := w.missing(root); err != nil || got != "/bench/neighbour" {
		t.Errorf("missing = %q, %v; want /bench/neighbour", got, err)
	}
}
