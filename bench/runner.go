package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/moat-sandbox/moat/internal/ocirun"
)

// Runs per runtime and workload when Config.Runs is 0. Micro workloads need
// fewer: each run already averages up to a million operations.
const (
	DefaultWallRuns  = 20
	DefaultMicroRuns = 5
)

// Config is what a session measures and how.
type Config struct {
	Runtimes   []Runtime
	Workloads  []Workload
	Baseline   string        // the runtime whose medians the ratios divide by
	Runs       int           // runs per runtime and workload; 0 for the defaults above
	Iterations int64         // operations per micro run; 0 for each workload's own
	Budget     time.Duration // a micro run stops early once it has run this long
	Timeout    time.Duration // a run taking longer fails, and is killed
	BinDir     string        // what $BIN stands for in a runtime's binary
	Busybox    string        // the static busybox of the default rootfs
	Rootfs     string        // a rootfs to copy instead of busybox; "" for busybox
	Load       int           // busy processes beside the second, loaded pass of each Loaded workload; 0 for none (load.go)
	// DensityCounts are the numbers of sandboxes a Density workload starts
	// at once; empty for DefaultDensityCounts.
	DensityCounts []int
	Progress      Progress
	// Reproduce, if set, returns the command that measures the figure of
	// runtime on workload again; it goes into the reports.
	Reproduce func(runtime, workload string) string
}

// session is one Run: its directories, its runtimes and its run counter.
type session struct {
	cfg    Config
	dir    string // everything temporary lives under it
	bundle string
	// data is the workspace bind-mounted at /data: inside the rootfs, so
	// that the native runtime's chroot finds it there too.
	data      string
	instances []*instance    // nil where the runtime was skipped
	out       *ocirun.Output // every run's stdout and stderr, emptied before each
	runs      int            // containers started, for fresh ids
}

// Run measures every workload of cfg under every runtime of cfg. When ctx is
// cancelled it stops, deletes every container it started, removes its
// temporary files and returns ctx's error. When the clean-up after a complete
// session fails, it returns the report together with the error: the figures
// are good, and what was left behind is named.
func Run(ctx context.Context, cfg Config) (_ *Report, err error) {
	rep := &Report{
		Schema: Schema, Date: time.Now().UTC().Truncate(time.Second), Machine: readMachine(),
		Rootfs: "busybox " + cfg.Busybox, Baseline: cfg.Baseline, BudgetMS: cfg.Budget.Milliseconds(),
	}
	if cfg.Rootfs != "" {
		rep.Rootfs = cfg.Rootfs
	}
	s := &session{cfg: cfg}
	if s.dir, err = os.MkdirTemp("", "moat-bench-"); err != nil {
		return nil, err
	}
	defer func() {
		cfg.Progress.Done()
		err = errors.Join(err, s.cleanUp())
	}()
	if err := s.prepare(ctx, rep); err != nil {
		return nil, err
	}
	if !slices.ContainsFunc(rep.Runtimes, func(rt RuntimeInfo) bool { return rt.Name == cfg.Baseline && rt.Status == StatusOK }) {
		cfg.Progress.Note("baseline %s does not run in this session: no ratios", cfg.Baseline)
	}
	plans := make([]plan, len(cfg.Workloads))
	total := 0
	for i, w := range cfg.Workloads {
		if plans[i], err = s.plan(w); err != nil {
			return nil, err
		}
		if plans[i].missing == "" {
			total += len(plans[i].steps) * s.passes(w)
		}
	}
	cfg.Progress.Start(total)
	for i, w := range cfg.Workloads {
		measure := s.measure
		switch w.Kind {
		case Serve:
			measure = s.measureServe
		case Density:
			measure = s.measureDensity
		case Fairness:
			measure = s.measureFairness
		}
		wr, err := measure(ctx, w, plans[i], rep.Runtimes)
		if err != nil {
			return nil, err
		}
		rep.Workloads = append(rep.Workloads, wr)
		if s.passes(w) == 2 {
			if wr, err = s.measureLoaded(ctx, w, plans[i], rep.Runtimes); err != nil {
				return nil, err
			}
			rep.Workloads = append(rep.Workloads, wr)
		}
	}
	rep.Machine.LoadAfter = loadAverage()
	return rep, nil
}

// plan is how a workload will be run in this session.
type plan struct {
	runs    int
	missing string // the first path it needs that the rootfs lacks
	active  []int  // indexes of the runtimes that run, in session order
	steps   []Step // over active
}

func (s *session) plan(w Workload) (plan, error) {
	p := plan{runs: s.cfg.Runs}
	if p.runs == 0 {
		switch w.Kind {
		case Micro:
			p.runs = DefaultMicroRuns
		case Serve:
			p.runs = DefaultServeCreates
		case Density:
			p.runs = 1 // each number of sandboxes is one cell, measured once
		case Fairness:
			p.runs = DefaultFairnessRounds
		default:
			p.runs = DefaultWallRuns
		}
	}
	var err error
	if p.missing, err = w.missing(filepath.Join(s.bundle, ocirun.Rootfs)); err != nil {
		return p, err
	}
	for i, in := range s.instances {
		if in != nil && runsWorkload(in.Kind, in.Serves, w.Kind) {
			p.active = append(p.active, i)
		}
	}
	switch w.Kind {
	case Serve:
		p.steps = serveSchedule(len(p.active))
		return p, nil
	case Density:
		p.steps = densitySchedule(len(p.active), s.densityCounts())
		return p, nil
	case Fairness:
		// One cell per runtime, its rounds inside it.
		p.steps = densitySchedule(len(p.active), []int{p.runs})
		return p, nil
	}
	p.steps = Schedule(len(p.active), p.runs)
	return p, nil
}

// passes is how many times w is measured: once quiet, and once more under
// load when the session has a load and w is marked for it.
func (s *session) passes(w Workload) int {
	if s.cfg.Load > 0 && w.Loaded {
		return 2
	}
	return 1
}

// measureLoaded measures w again with the session's busy processes
// running, started before its first run and stopped after its last.
func (s *session) measureLoaded(ctx context.Context, w Workload, p plan, runtimes []RuntimeInfo) (_ WorkloadResult, err error) {
	lw := w.loaded(s.cfg.Load)
	if p.missing != "" {
		return s.measure(ctx, lw, p, runtimes)
	}
	l, err := startLoad(s.cfg.Load)
	if err != nil {
		return WorkloadResult{}, err
	}
	defer func() { err = errors.Join(err, l.stop()) }()
	return s.measure(ctx, lw, p, runtimes)
}

// prepare builds the bundle and finds the runtimes, recording each in rep.
func (s *session) prepare(ctx context.Context, rep *Report) error {
	s.bundle = filepath.Join(s.dir, "bundle")
	rootfs := filepath.Join(s.bundle, ocirun.Rootfs)
	if err := os.MkdirAll(rootfs, 0o755); err != nil {
		return err
	}
	if err := buildRootfs(ctx, rootfs, s.cfg.Busybox, s.cfg.Rootfs); err != nil {
		return err
	}
	s.data = filepath.Join(rootfs, dataDir)
	for _, d := range []string{s.data, filepath.Join(rootfs, rootScratch)} {
		if err := os.MkdirAll(d, 0o777); err != nil {
			return err
		}
	}
	buildFailures, err := buildPrograms(ctx, s.cfg.Workloads, filepath.Join(s.dir, "src"), filepath.Join(rootfs, "bench"))
	if err != nil {
		return err
	}
	for program, err := range buildFailures {
		s.cfg.Progress.Note("workload program %s not built: %v", program, err)
	}
	if s.out, err = ocirun.NewOutput(s.dir); err != nil {
		return err
	}
	for _, rt := range s.cfg.Runtimes {
		info, in, err := s.find(ctx, rt)
		if err != nil {
			return err
		}
		if info.Status == StatusSkipped {
			s.cfg.Progress.Note("%s: skipped: %s", rt.Name, info.Reason)
		}
		rep.Runtimes = append(rep.Runtimes, info)
		s.instances = append(s.instances, in)
	}
	return nil
}

// newResult is w's result before any run; skipped when the plan lacks
// something w needs, which it then says.
func (s *session) newResult(w Workload, p plan) (WorkloadResult, bool) {
	wr := WorkloadResult{Name: w.Name, Kind: w.Kind, What: w.What, Unit: w.Unit, Runs: p.runs, Status: StatusOK}
	if p.missing == "" {
		return wr, false
	}
	wr.Status, wr.Reason = StatusSkipped, "needs "+p.missing
	s.cfg.Progress.Note("%s: skipped: %s", w.Name, wr.Reason)
	return wr, true
}

// measure runs one workload under every runtime found, interleaved.
func (s *session) measure(ctx context.Context, w Workload, p plan, runtimes []RuntimeInfo) (WorkloadResult, error) {
	wr, skipped := s.newResult(w, p)
	if skipped {
		return wr, nil
	}
	wr.Argv = w.argv(s.cfg.Iterations, s.cfg.Budget)
	containerArgv := wr.Argv
	if w.Kind == Exec {
		containerArgv = Hold
	}
	spec := newSpec(containerArgv, s.data, w.WritableRoot)
	dirs := []string{s.data}
	for _, in := range s.instances {
		if in != nil && in.Kind == KindCommand {
			dirs = append(dirs, in.scratch)
		}
	}
	cwd, err := makeProjects(ctx, w, dirs)
	if err != nil {
		return wr, err
	}
	if cwd != "" {
		spec.Process.Cwd = cwd
	}
	if err := ocirun.WriteSpec(s.bundle, spec); err != nil {
		return wr, err
	}
	samples := make([][]float64, len(s.instances))
	failures := make([]error, len(s.instances))
	for _, st := range p.steps {
		i := p.active[st.Runtime]
		in := s.instances[i]
		what := fmt.Sprintf("%s %s run %d/%d", w.Name, in.Name, st.Round, wr.Runs)
		if st.Round == 0 {
			what = fmt.Sprintf("%s %s warm-up", w.Name, in.Name)
		}
		if failures[i] != nil {
			s.cfg.Progress.Advance(1, what+": skipped after failure")
			continue
		}
		v, err := s.once(ctx, in, w, spec)
		if ctx.Err() != nil {
			return wr, ctx.Err()
		}
		if err != nil {
			failures[i] = err
			s.cfg.Progress.Note("%s %s: failed: %v", w.Name, in.Name, err)
			s.cfg.Progress.Advance(1, what+": failed")
			continue
		}
		if st.Round > 0 {
			samples[i] = append(samples[i], v)
		}
		s.cfg.Progress.Advance(1, fmt.Sprintf("%s: %s %s", what, formatValue(v), w.Unit))
	}
	wr.Results = s.results(w, runtimes, samples, failures)
	return wr, nil
}

// once runs w once under in and returns its figure.
func (s *session) once(ctx context.Context, in *instance, w Workload, spec *specs.Spec) (float64, error) {
	s.runs++
	id := fmt.Sprintf("moat-bench-%d-%d", os.Getpid(), s.runs)
	if w.Kind == Exec {
		took, err := in.exec(ctx, id, spec, w.Argv, s.cfg.Timeout, s.out)
		if err != nil {
			return 0, err
		}
		return float64(took) / float64(time.Millisecond), nil
	}
	wall, err := in.run(ctx, id, spec, s.cfg.Timeout, s.out)
	if err != nil {
		return 0, err
	}
	if w.Kind == Wall {
		return float64(wall) / float64(time.Millisecond), nil
	}
	stdout, _, err := s.out.Read()
	if err != nil {
		return 0, err
	}
	return parseResult([]byte(stdout), w.resultName(), w.Unit)
}

// runsWorkload reports whether a runtime of kind rt, which serves E2B's
// API or not, runs workloads of kind w: a command runtime runs the host's
// programs on the host's root, not the bundle's workload programs and
// mounts; a serve workload needs moat serve; a density or fairness
// workload starts sandboxes through the OCI CLI.
func runsWorkload(rt string, serves bool, w Kind) bool {
	switch {
	case w == Serve:
		return serves
	case w == Density || w == Fairness:
		return rt == KindOCI
	case rt == KindCommand:
		return w == Wall
	default:
		return true
	}
}

// notRunReason says why runsWorkload is false for a runtime of kind rt.
func notRunReason(rt string, w Kind) string {
	switch w {
	case Serve:
		return "it serves no E2B API (serves in the runtime list)"
	case Density:
		return "density starts sandboxes through an OCI runtime's create and start"
	case Fairness:
		return "the neighbours are sandboxes started through an OCI runtime's create and start"
	}
	return "a command runtime runs the whole-run (wall) workloads alone"
}

// cellResults is one Result per runtime of a workload measured in cells
// of its own kind (serve, density, fairness): fill puts runtime i's cells into
// r where it ran the workload.
func (s *session) cellResults(w Workload, runtimes []RuntimeInfo, fill func(i int, r *Result)) []Result {
	var out []Result
	for i, info := range runtimes {
		r := Result{Runtime: info.Name, Status: info.Status, Reason: info.Reason}
		switch {
		case info.Status == StatusSkipped:
		case !runsWorkload(info.Kind, info.Serves, w.Kind):
			r.Status, r.Reason = StatusSkipped, notRunReason(info.Kind, w.Kind)
		default:
			fill(i, &r)
		}
		if s.cfg.Reproduce != nil {
			r.Reproduce = s.cfg.Reproduce(info.Name, w.Name)
		}
		out = append(out, r)
	}
	return out
}

// results summarises the samples of each runtime and relates them to the
// baseline's.
func (s *session) results(w Workload, runtimes []RuntimeInfo, samples [][]float64, failures []error) []Result {
	out := make([]Result, len(runtimes))
	base := 0.0
	for i, info := range runtimes {
		r := Result{Runtime: info.Name, Status: info.Status, Reason: info.Reason}
		switch {
		case info.Status == StatusSkipped:
		case !runsWorkload(info.Kind, info.Serves, w.Kind):
			r.Status, r.Reason = StatusSkipped, notRunReason(info.Kind, w.Kind)
		case failures[i] != nil:
			r.Status, r.Reason = StatusFailed, failures[i].Error()
		default:
			r.Samples = samples[i]
			sum := Summarize(samples[i])
			r.Summary = &sum
			if info.Name == s.cfg.Baseline {
				base = sum.Median
			}
		}
		if s.cfg.Reproduce != nil {
			r.Reproduce = s.cfg.Reproduce(info.Name, w.Name)
		}
		out[i] = r
	}
	for i := range out {
		r := &out[i]
		if r.Summary == nil {
			continue
		}
		if ratio, ok := Ratio(r.Median, base); ok {
			r.Ratio = ratio
			r.Reading = Reading(r.Runtime, s.cfg.Baseline, ratio)
			if r.Runtime == s.cfg.Baseline {
				r.Reading = "baseline"
			}
		}
	}
	return out
}
