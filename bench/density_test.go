package bench

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// A moat sentry's smaps_rollup on Linux 6.1.
const sentryRollup = `00400000-7ffcbdd45000 ---p 00000000 00:00 0                              [rollup]
Rss:               16136 kB
Pss:               10670 kB
Pss_Dirty:         10669 kB
Pss_Anon:           2476 kB
Pss_File:           6852 kB
Pss_Shmem:          1341 kB
Shared_Clean:          8 kB
Private_Dirty:      5216 kB
Swap:                  0 kB
SwapPss:               0 kB
`

func TestParseRollupReadsThePssLinesAlone(t *testing.T) {
	got, err := parseRollup(strings.NewReader(sentryRollup))
	if want := (rollup{total: 10670, anon: 2476, file: 6852, shmem: 1341}); err != nil || got != want {
		t.Errorf("parseRollup = %+v, %v; want %+v (not Pss_Dirty, not SwapPss)", got, err, want)
	}
	// Before Linux 5.8 there are no parts: the whole is enough.
	got, err = parseRollup(strings.NewReader("Rss: 20 kB\nPss:  12 kB\n"))
	if err != nil || got != (rollup{total: 12}) {
		t.Errorf("parseRollup of an old kernel's rollup = %+v, %v; want Pss 12 alone", got, err)
	}
	for _, bad := range []string{"", "Rss: 20 kB\n", "Pss: twelve kB\n"} {
		if _, err := parseRollup(strings.NewReader(bad)); err == nil {
			t.Errorf("parseRollup(%q) gave no error", bad)
		}
	}
}

func TestProcessNameIsTheProgramAndItsSubcommand(t *testing.T) {
	for cmdline, want := range map[string]string{
		"moat\x00boot\x00":                                     "moat boot",
		"moat\x00gofer\x00--rootfs\x00/r\x00":                  "moat gofer",
		"runsc-sandbox\x00--root=/s\x00--network=none\x00boot": "runsc-sandbox",
		"/bin/sleep\x003600\x00":                               "sleep 3600",
		"":                                                     stubName, // a platform's stub has no command line
	} {
		if got := processName([]byte(cmdline)); got != want {
			t.Errorf("processName(%q) = %q, want %q", cmdline, got, want)
		}
	}
}

// fakeCgroup is a memory hierarchy in a directory: cgroup /sb holding
// procs, a cgroup below it holding below, and usage bytes charged.
func fakeCgroup(t *testing.T, procs, below []int, usage string) memoryCgroup {
	t.Helper()
	mc := memoryCgroup{cgroupHierarchy{mountpoint: t.TempDir(), root: "/"}}
	write := func(dir string, pids []int) {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		var lines []string
		for _, p := range pids {
			lines = append(lines, strconv.Itoa(p))
		}
		if err := os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(mc.dir("/sb"), procs)
	write(filepath.Join(mc.dir("/sb"), "inner"), below)
	if err := os.WriteFile(filepath.Join(mc.dir("/sb"), "memory.usage_in_bytes"), []byte(usage), 0o644); err != nil {
		t.Fatal(err)
	}
	return mc
}

func TestSandboxProcsAreTheCgroupsAndThePidsDescendants(t *testing.T) {
	child := exec.Command("sleep", "30")
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { child.Process.Kill(); child.Wait() }()
	self := os.Getpid()
	// 999999999 is above pid_max: a cgroup member that is no descendant.
	mc := fakeCgroup(t, []int{self}, []int{999999999}, "8052736\n")
	got, err := sandboxProcs(mc, "/sb", self)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(got, self) || !slices.Contains(got, child.Process.Pid) || !slices.Contains(got, 999999999) {
		t.Errorf("sandboxProcs = %v, want %d (in the cgroup), %d (its child) and 999999999 (in a cgroup below)", got, self, child.Process.Pid)
	}
	if usage, err := mc.usage("/sb"); err != nil || usage != 8052736 {
		t.Errorf("usage = %d, %v; want 8052736", usage, err)
	}
	if _, err := sandboxProcs(mc, "/sb", child.Process.Pid); err == nil {
		t.Error("sandboxProcs accepted a runtime's process outside the sandbox's cgroup")
	}
}

func TestACgroupDirIsFoundBelowTheMountsRoot(t *testing.T) {
	mc := cgroupHierarchy{mountpoint: "/sys/fs/cgroup/memory", root: "/outer"}
	if got := mc.dir("/outer/moat-bench-1"); got != "/sys/fs/cgroup/memory/moat-bench-1" {
		t.Errorf("dir = %s", got)
	}
}

func TestDensityCellSummary(t *testing.T) {
	dc := DensityCell{StartMS: []float64{50, 10, 20, 30, 40, 60, 70, 80, 90, 100},
		PSSMiB: []float64{9, 8, 10}, CgroupMiB: []float64{4, 3, 5}}
	dc.summarize()
	if dc.StartP50 != 50 || dc.StartP90 != 90 {
		t.Errorf("start p50 %v p90 %v, want 50 and 90 (nearest rank of 10)", dc.StartP50, dc.StartP90)
	}
	if dc.PSSMedian != 9 || dc.PSSTotal != 27 || dc.CgroupMedian != 4 || dc.CgroupTotal != 12 {
		t.Errorf("PSS median %v total %v, cgroup median %v total %v; want 9, 27, 4, 12", dc.PSSMedian, dc.PSSTotal, dc.CgroupMedian, dc.CgroupTotal)
	}
	one := DensityCell{StartMS: []float64{70}, PSSMiB: []float64{9}, CgroupMiB: []float64{4}}
	one.summarize()
	if one.StartP50 != 70 || one.StartP90 != 70 {
		t.Errorf("one sandbox: p50 %v p90 %v, want its own start", one.StartP50, one.StartP90)
	}
}

func TestDensityScheduleRunsEachCountUnderEveryRuntimeInTurn(t *testing.T) {
	got := densitySchedule(2, []int{1, 10})
	want := []Step{{0, 1}, {1, 1}, {0, 2}, {1, 2}}
	if !slices.Equal(got, want) {
		t.Errorf("densitySchedule = %v, want %v", got, want)
	}
}

func densityReport() *Report {
	return &Report{
		Runtimes: []RuntimeInfo{{Name: "runc", Status: StatusOK}, {Name: "moat", Status: StatusOK}, {Name: "native", Status: StatusOK}},
		Workloads: []WorkloadResult{{Name: "density", Kind: Density, Unit: "MiB", Argv: Hold, Status: StatusOK, Results: []Result{
			{Runtime: "runc", Status: StatusOK, Reproduce: "moat-bench --runtime runc --workload density", Density: []DensityCell{
				{Sandboxes: 1, Status: StatusOK, StartMS: []float64{45.8}, StartP50: 45.8, StartP90: 45.8, PSSMiB: []float64{1.34},
					PSSMedian: 1.34, PSSTotal: 1.34, CgroupMiB: []float64{0.72}, CgroupMedian: 0.72, CgroupTotal: 0.72,
					Processes: []ProcessGroup{{Name: "sleep 3600", Count: 1, PSSMiB: 1.34, AnonMiB: 0.1, FileMiB: 1.24}}},
				{Sandboxes: 10, Status: StatusFailed, Reason: "sandbox 3 of 10: create | failed"},
			}},
			{Runtime: "moat", Status: StatusOK, Density: []DensityCell{
				{Sandboxes: 1, Status: StatusOK, StartP50: 73.8, StartP90: 73.8, PSSMedian: 17.9, PSSTotal: 17.9, CgroupMedian: 8.16, CgroupTotal: 8.16,
					Processes: []ProcessGroup{{Name: "moat boot", Count: 1, PSSMiB: 10.6}, {Name: "stub", Count: 4, PSSMiB: 0.71}}},
			}},
			{Runtime: "native", Status: StatusSkipped, Reason: notRunReason(KindNative, Density)},
		}}},
	}
}

func TestMarkdownShowsADensityRowPerCountAndTheFirstSandboxsProcesses(t *testing.T) {
	var b bytes.Buffer
	writeMarkdown(&b, densityReport(), "")
	md := b.String()
	for _, want := range []string{
		"running `/bin/sleep 3600`",
		"| runc | 1 | 45.8 | 45.8 | 1.34 | 1.34 | 0.72 | 0.72 | `moat-bench --runtime runc --workload density` |",
		`| runc | 10 | failed: sandbox 3 of 10: create \| failed | | | | | |  |`,
		"| moat | 1 | 73.8 | 73.8 | 17.9 | 17.9 | 8.16 | 8.16 |  |",
		"| native | skipped: density starts sandboxes through",
		"| runc | 1 | `sleep 3600` | 1 | 1.34 | 0.1 | 1.24 | 0 |",
		"| moat | 1 | `stub` | 4 | 0.71 |",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("Markdown lacks %q:\n%s", want, md)
		}
	}
}

func TestSummaryShowsADensityRowPerCount(t *testing.T) {
	var b bytes.Buffer
	if err := WriteSummary(&b, densityReport()); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"start p50", "17.9", "failed: sandbox 3 of 10", "native       skipped: density"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("summary lacks %q:\n%s", want, b.String())
		}
	}
}
