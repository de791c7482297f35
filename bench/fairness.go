package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/moat-sandbox/moat/internal/ocirun"
)

// A Fairness workload asks what misbehaving neighbours take from a
// sandbox (issue 13: "a memory bomb, a fork bomb and a CPU hog each run
// in one sandbox while a second sandbox runs python3 -c start-up in a
// loop: the second keeps at least half of its quiet-machine
// throughput"). Under each OCI runtime, one cell: first the measured
// sandbox alone, Runs rounds, each a fresh sandbox running
// workloads/repeat.c over the workload's Argv for the session's Budget;
// then three neighbours (neighbours()) are started, each in a sandbox of
// its own with the same linux.resources as the measured one
// (fairnessResources), their limits are seen to act (the memory bomb is
// killed at its limit at least once, neither its sandbox's memory cgroup
// exceeding the limit by much: neighbourWatch), and the same rounds run
// beside them. The figure is runs per second, the median of the rounds;
// the ratio is noisy over quiet. Every sandbox is deleted after its cell
// and on any failure; a cgroup left behind fails the cell.

// DefaultFairnessRounds is how many rounds each pass of a fairness cell
// has when Config.Runs is 0.
const DefaultFairnessRounds = 5

// fairnessBar is the ratio issue 13 accepts: half the quiet throughput.
const fairnessBar = 0.5

// fairnessIterations bounds a round when the session's Iterations do not:
// far more runs than a round's Budget allows, so that the Budget ends it.
const fairnessIterations = 100_000

// Waiting for the neighbours' limits to act: at least neighbourSettle, so
// that the fork bomb has filled its pids and the hog spins on every CPU,
// and at most neighbourVerify for the memory bomb's first death.
const (
	neighbourSettle = 2 * time.Second
	neighbourVerify = 30 * time.Second
)

// FairnessCell is one runtime's fairness figures. Throughputs are in runs
// per second, the median of the rounds'.
type FairnessCell struct {
	Status string `json:"status"`
	Reason string `json:"reason,omitempty"`
	// QuietMS and NoisyMS are each round's ms per run, alone and beside
	// the neighbours.
	QuietMS []float64 `json:"quiet_ms_per_run,omitempty"`
	NoisyMS []float64 `json:"noisy_ms_per_run,omitempty"`
	Quiet   float64   `json:"quiet_runs_per_s,omitempty"`
	Noisy   float64   `json:"noisy_runs_per_s,omitempty"`
	// QuietRoundCPUs and NoisyRoundCPUs are the CPUs the measured
	// sandbox's cgroup used in each round (its CPU time over the round's
	// wall time, create to exit); QuietCPUs and NoisyCPUs their medians.
	QuietRoundCPUs []float64 `json:"quiet_round_cpus,omitempty"`
	NoisyRoundCPUs []float64 `json:"noisy_round_cpus,omitempty"`
	QuietCPUs      float64   `json:"quiet_cpus,omitempty"`
	NoisyCPUs      float64   `json:"noisy_cpus,omitempty"`
	// Ratio is Noisy over Quiet; Meets says it is at least fairnessBar.
	Ratio      float64          `json:"noisy_over_quiet,omitempty"`
	Meets      bool             `json:"meets_half"`
	Neighbours []NeighbourStats `json:"neighbours,omitempty"`
}

// NeighbourStats is what one neighbour did while the noisy rounds ran.
type NeighbourStats struct {
	Name string   `json:"name"`
	Argv []string `json:"argv"`
	// Starts counts its program's starts: a memory bomb's deaths at its
	// limit, plus one.
	Starts int `json:"starts"`
	// PeakMemoryMiB and PeakPids are the highest its cgroups were seen
	// at (memory usage, pids.current), from its start to the cell's end.
	PeakMemoryMiB float64 `json:"peak_memory_mib"`
	PeakPids      uint64  `json:"peak_pids"`
	// CPUs is the CPU time its cgroup used during the noisy rounds over
	// their wall time.
	CPUs float64 `json:"cpus"`
	// End is its container's status after the noisy rounds: running,
	// or stopped if its sandbox died; Stderr is then the end of what
	// the sandbox and the runtime wrote to its stderr, which says why.
	End    string `json:"end"`
	Stderr string `json:"stderr,omitempty"`
}

// measureFairness runs a Fairness workload under every OCI runtime.
func (s *session) measureFairness(ctx context.Context, w Workload, p plan, runtimes []RuntimeInfo) (WorkloadResult, error) {
	wr, skipped := s.newResult(w, p)
	if skipped {
		return wr, nil
	}
	wr.Argv = w.Argv
	var cg fairnessCgroups
	var err error
	if cg.mem, err = findMemoryCgroup(); err != nil {
		return wr, err
	}
	if cg.pids, err = findHierarchy("pids"); err != nil {
		return wr, err
	}
	if cg.cpu, err = cpuAccounting(); err != nil {
		return wr, err
	}
	cells := make([]*FairnessCell, len(s.instances))
	for _, st := range p.steps {
		i := p.active[st.Runtime]
		in := s.instances[i]
		fc, err := s.fairnessCell(ctx, in, w, cg, p.runs)
		if ctx.Err() != nil {
			return wr, ctx.Err()
		}
		what := w.Name + " " + in.Name
		if err != nil {
			fc.Status, fc.Reason = StatusFailed, err.Error()
			s.cfg.Progress.Note("%s: failed: %v", what, err)
			s.cfg.Progress.Advance(1, what+": failed")
		} else {
			s.cfg.Progress.Advance(1, fmt.Sprintf("%s: %s runs/s quiet, %s beside the neighbours (%sx)", what,
				formatValue(fc.Quiet), formatValue(fc.Noisy), formatRatio(fc.Ratio)))
		}
		cells[i] = &fc
	}
	wr.Results = s.cellResults(w, runtimes, func(i int, r *Result) { r.Fairness = cells[i] })
	return wr, nil
}

// fairnessCgroups are the hierarchies a fairness cell reads.
type fairnessCgroups struct {
	mem  memoryCgroup
	pids cgroupHierarchy
	cpu  cgroupHierarchy
}

// fairnessCell measures w under in alone, then beside the neighbours, and
// deletes every sandbox it started, whatever fails. The session's Timeout
// bounds the whole cell.
func (s *session) fairnessCell(ctx context.Context, in *instance, w Workload, cg fairnessCgroups, rounds int) (fc FairnessCell, err error) {
	ctx, cancelTimeout := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancelTimeout()
	ctx, abort := context.WithCancelCause(ctx)
	defer abort(nil)
	var all []string
	defer func() { err = errors.Join(err, s.deleteSandboxes(in, cg.mem, all)) }()
	newID := func() string {
		s.runs++
		id := fmt.Sprintf("moat-bench-%d-%d", os.Getpid(), s.runs)
		all = append(all, id)
		return id
	}
	// A cell aborted by the watch, or timed out, says why rather than
	// "context canceled".
	cause := func(err error) error {
		if c := context.Cause(ctx); c != nil && ctx.Err() != nil {
			return c
		}
		return err
	}

	fc.Status = StatusOK
	quiet, err := s.fairnessRounds(ctx, in, w, cg.cpu, rounds, newID)
	fc.QuietMS, fc.QuietRoundCPUs = quiet.msPerRun, quiet.cpus
	if err != nil {
		return fc, fmt.Errorf("alone: %w", cause(err))
	}
	// Watched from before the first starts: a cgroup not made yet reads
	// as nothing.
	var ids, paths []string
	for range neighbours(0) {
		id := newID()
		ids, paths = append(ids, id), append(paths, "/"+id)
	}
	watch := watchNeighbours(cg.mem, cg.pids, paths, abort)
	defer watch.finish()
	started, err := s.startNeighbours(ctx, in, ids)
	defer func() {
		for _, n := range started {
			n.out.Close()
		}
	}()
	if err != nil {
		return fc, cause(err)
	}
	if err := s.verifyNeighbours(ctx, in, started); err != nil {
		return fc, cause(err)
	}
	cpu0, err := neighboursCPU(cg.cpu, started)
	if err != nil {
		return fc, err
	}
	t0 := time.Now()
	noisy, err := s.fairnessRounds(ctx, in, w, cg.cpu, rounds, newID)
	fc.NoisyMS, fc.NoisyRoundCPUs = noisy.msPerRun, noisy.cpus
	if err != nil {
		return fc, fmt.Errorf("beside the neighbours: %w", cause(err))
	}
	wall := time.Since(t0)
	cpu1, err := neighboursCPU(cg.cpu, started)
	if err != nil {
		return fc, err
	}
	peakMem, peakPids := watch.finish()
	if err := context.Cause(ctx); err != nil && ctx.Err() != nil {
		return fc, err
	}
	for k, n := range started {
		ns := NeighbourStats{Name: n.Name, Argv: n.Argv, PeakMemoryMiB: float64(peakMem[k]) / (1 << 20), PeakPids: peakPids[k],
			CPUs: float64(cpu1[k]-cpu0[k]) / float64(wall)}
		if ns.Starts, err = n.starts(); err != nil {
			return fc, err
		}
		if ns.End, err = containerStatus(in, n.id); err != nil {
			return fc, err
		}
		if ns.End != string(specs.StateRunning) {
			ns.Stderr = strings.TrimPrefix(tail(n.out.Stderr), ": ")
		}
		fc.Neighbours = append(fc.Neighbours, ns)
	}
	fc.summarize()
	return fc, nil
}

// fairnessPass is the measured sandbox's rounds of one pass: each
// round's ms per run, and the CPUs its cgroup used meanwhile (its CPU
// time over the round's wall time, create to exit).
type fairnessPass struct {
	msPerRun, cpus []float64
}

// fairnessRounds runs the measured sandbox rounds times, each a fresh one.
func (s *session) fairnessRounds(ctx context.Context, in *instance, w Workload, cpu cgroupHierarchy, rounds int, newID func() string) (fairnessPass, error) {
	iterations := s.cfg.Iterations
	if iterations <= 0 {
		iterations = fairnessIterations
	}
	argv := append([]string{programPath(w.Program), strconv.FormatInt(iterations, 10),
		strconv.FormatInt(s.cfg.Budget.Milliseconds(), 10), w.Name}, w.Argv...)
	var p fairnessPass
	for round := range rounds {
		id := newID()
		spec := fairnessSpec(argv, s.data, id)
		if err := ocirun.WriteSpec(s.bundle, spec); err != nil {
			return p, err
		}
		sampler := sampleCPU(cpu, "/"+id)
		wall, err := in.run(ctx, id, spec, s.cfg.Timeout, s.out)
		used := sampler.finish()
		if err != nil {
			return p, fmt.Errorf("round %d: %w", round+1, err)
		}
		stdout, _, err := s.out.Read()
		if err != nil {
			return p, err
		}
		v, err := parseResult([]byte(stdout), w.Name, "ms/run")
		if err != nil {
			return p, fmt.Errorf("round %d: %w", round+1, err)
		}
		p.msPerRun = append(p.msPerRun, v)
		p.cpus = append(p.cpus, float64(used)/float64(wall))
	}
	return p, nil
}

// startedNeighbour is a neighbour's running sandbox and its output.
type startedNeighbour struct {
	neighbour
	id  string
	out *ocirun.Output
}

// startNeighbours creates and starts every neighbour as container ids[k],
// each with its stdout and stderr in files of its own, and returns those
// it started.
func (s *session) startNeighbours(ctx context.Context, in *instance, ids []string) ([]startedNeighbour, error) {
	var started []startedNeighbour
	for k, n := range neighbours(runtime.NumCPU()) {
		id := ids[k]
		dir := filepath.Join(s.dir, id)
		if err := os.Mkdir(dir, 0o755); err != nil {
			return started, err
		}
		out, err := ocirun.NewOutput(dir)
		if err != nil {
			return started, err
		}
		started = append(started, startedNeighbour{n, id, out})
		if err := ocirun.WriteSpec(s.bundle, fairnessSpec(n.Argv, s.data, id)); err != nil {
			return started, err
		}
		if _, err := in.createStart(ctx, id, out); err != nil {
			return started, fmt.Errorf("%s: %w", n.Name, err)
		}
	}
	return started, nil
}

// verifyNeighbours waits until the memory bomb's limit has acted: its
// program started again after being killed, or its whole sandbox
// stopped; and for neighbourSettle at least. A bomb that reached its
// ceiling, or no sign of the limit within neighbourVerify, fails the cell.
func (s *session) verifyNeighbours(ctx context.Context, in *instance, started []startedNeighbour) error {
	var bomb startedNeighbour
	for _, n := range started {
		if n.Name == memoryBomb {
			bomb = n
		}
	}
	t0 := time.Now()
	lastState := t0
	for {
		text, err := readAll(bomb.out.Stdout)
		if err != nil {
			return err
		}
		if strings.Contains(text, "ceiling") {
			return fmt.Errorf("%s: %s", bomb.Name, strings.TrimSpace(text[strings.Index(text, "ceiling"):]))
		}
		acted := strings.Count(text, "start ") >= 2
		if !acted && time.Since(lastState) >= time.Second {
			lastState = time.Now()
			status, err := containerStatus(in, bomb.id)
			if err != nil {
				return err
			}
			acted = status == "stopped"
		}
		if acted && time.Since(t0) >= neighbourSettle {
			return nil
		}
		if time.Since(t0) > neighbourVerify {
			return fmt.Errorf("%s: not killed at its limit of %d MiB within %s%s", bomb.Name, fairnessMemory>>20, neighbourVerify, tail(bomb.out.Stderr))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// starts counts the "start" lines the neighbour's program printed.
func (n startedNeighbour) starts() (int, error) {
	text, err := readAll(n.out.Stdout)
	return strings.Count(text, "start "), err
}

// readAll reads the whole of f, which its sandbox is still writing.
func readAll(f *os.File) (string, error) {
	data, err := os.ReadFile(f.Name())
	return string(data), err
}

// containerStatus is the status the runtime's state reports for id.
func containerStatus(in *instance, id string) (string, error) {
	st, err := in.oci.State(id)
	if err != nil {
		return "", err
	}
	return string(st.Status), nil
}

// neighboursCPU reads each neighbour's CPU time so far.
func neighboursCPU(h cgroupHierarchy, started []startedNeighbour) ([]time.Duration, error) {
	var out []time.Duration
	for _, n := range started {
		t, err := cpuTime(h, "/"+n.id)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", n.Name, err)
		}
		out = append(out, t)
	}
	return out, nil
}

// summarize fills in the medians and the ratio from the rounds.
func (fc *FairnessCell) summarize() {
	fc.Quiet, fc.Noisy = medianThroughput(fc.QuietMS), medianThroughput(fc.NoisyMS)
	fc.QuietCPUs, fc.NoisyCPUs = median(fc.QuietRoundCPUs), median(fc.NoisyRoundCPUs)
	if r, ok := Ratio(fc.Noisy, fc.Quiet); ok {
		fc.Ratio = r
		fc.Meets = r >= fairnessBar
	}
}

// medianThroughput is the median of the rounds' runs per second.
func medianThroughput(msPerRun []float64) float64 {
	perS := make([]float64, len(msPerRun))
	for k, ms := range msPerRun {
		perS[k] = 1000 / ms
	}
	return median(perS)
}

// median is Summarize's median, and 0 for no samples.
func median(samples []float64) float64 {
	if len(samples) == 0 {
		return 0
	}
	return Summarize(samples).Median
}
