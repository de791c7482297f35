package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/moat-sandbox/moat/internal/ocirun"
)

// A Density workload measures what idle sandboxes cost the host: N of
// them (Config.DensityCounts, DefaultDensityCounts) started one after
// another through the runtime's OCI CLI (create, start), each running
// the workload's Argv (Hold), all kept running until the last has started and settled, then
// measured and deleted. Per sandbox it records the create+start time (with
// the ones before it running), the PSS summed over all its host processes
// (hostmem.go: its cgroup's and its process's descendants), and its memory
// cgroup's usage. Every cell starts with one untimed sandbox, deleted
// before the timed ones, so that the first timed one finds the runtime's
// binary and the rootfs in the page cache.

// DefaultDensityCounts are the numbers of sandboxes at once a Density
// workload is measured at when Config.DensityCounts is empty.
var DefaultDensityCounts = []int{1, 10, 50}

// densitySettle is how long the sandboxes run after the last has started
// before they are measured: their processes' memory is steady by then
// (a moat sandbox's PSS here: 17,886 KiB from 0 to 2 s after start,
// 17,894 at 10 s).
const densitySettle = time.Second

// DensityCell is one number of sandboxes under one runtime. Memory is in
// MiB; the medians and p90 are by nearest rank (Percentile).
type DensityCell struct {
	Sandboxes int    `json:"sandboxes"`
	Status    string `json:"status"`
	Reason    string `json:"reason,omitempty"`
	// StartMS is each sandbox's create and start, in ms, in start order.
	StartMS  []float64 `json:"start_ms,omitempty"`
	StartP50 float64   `json:"start_p50_ms,omitempty"`
	StartP90 float64   `json:"start_p90_ms,omitempty"`
	// PSSMiB is each sandbox's PSS, summed over its host processes.
	PSSMiB    []float64 `json:"pss_mib,omitempty"`
	PSSMedian float64   `json:"pss_median_mib,omitempty"`
	PSSTotal  float64   `json:"pss_total_mib,omitempty"`
	// CgroupMiB is each sandbox's memory cgroup usage (memory.current,
	// or memory.usage_in_bytes on v1).
	CgroupMiB    []float64 `json:"cgroup_mib,omitempty"`
	CgroupMedian float64   `json:"cgroup_median_mib,omitempty"`
	CgroupTotal  float64   `json:"cgroup_total_mib,omitempty"`
	// Processes are the first sandbox's host processes by name
	// (processName), with their PSS.
	Processes []ProcessGroup `json:"processes,omitempty"`
}

// ProcessGroup is the processes of one name in a sandbox: their PSS and
// its anonymous, file-backed (mostly the runtime's binary) and shared
// memory parts, in MiB.
type ProcessGroup struct {
	Name     string  `json:"name"`
	Count    int     `json:"count"`
	PSSMiB   float64 `json:"pss_mib"`
	AnonMiB  float64 `json:"anon_mib"`
	FileMiB  float64 `json:"file_mib"`
	ShmemMiB float64 `json:"shmem_mib"`
}

// densitySchedule orders the cells of a Density workload under n
// runtimes, interleaved: Round i+1 is counts[i].
func densitySchedule(runtimes int, counts []int) []Step {
	var steps []Step
	for c := range counts {
		for rt := range runtimes {
			steps = append(steps, Step{Runtime: rt, Round: c + 1})
		}
	}
	return steps
}

// measureDensity runs a Density workload under every OCI runtime.
func (s *session) measureDensity(ctx context.Context, w Workload, p plan, runtimes []RuntimeInfo) (WorkloadResult, error) {
	wr, skipped := s.newResult(w, p)
	if skipped {
		return wr, nil
	}
	wr.Argv = w.Argv
	mc, err := findMemoryCgroup()
	if err != nil {
		return wr, err
	}
	counts := s.densityCounts()
	cells := make([][]DensityCell, len(s.instances))
	for _, st := range p.steps {
		i := p.active[st.Runtime]
		in := s.instances[i]
		n := counts[st.Round-1]
		dc, err := s.densityCell(ctx, in, w, mc, n)
		if ctx.Err() != nil {
			return wr, ctx.Err()
		}
		what := fmt.Sprintf("%s %s x%d", w.Name, in.Name, n)
		if err != nil {
			dc = DensityCell{Sandboxes: n, Status: StatusFailed, Reason: err.Error()}
			s.cfg.Progress.Note("%s: failed: %v", what, err)
			s.cfg.Progress.Advance(1, what+": failed")
		} else {
			s.cfg.Progress.Advance(1, fmt.Sprintf("%s: start p50 %s ms, PSS median %s MiB", what,
				formatValue(dc.StartP50), formatValue(dc.PSSMedian)))
		}
		cells[i] = append(cells[i], dc)
	}
	wr.Results = s.cellResults(w, runtimes, func(i int, r *Result) { r.Density = cells[i] })
	return wr, nil
}

func (s *session) densityCounts() []int {
	if len(s.cfg.DensityCounts) > 0 {
		return s.cfg.DensityCounts
	}
	return DefaultDensityCounts
}

// densityCell starts n sandboxes under in, measures them and deletes them,
// whatever fails. The session's Timeout bounds the starts; each runtime
// command has ocirun.CommandTimeout besides.
func (s *session) densityCell(ctx context.Context, in *instance, w Workload, mc memoryCgroup, n int) (_ DensityCell, err error) {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	if err := s.out.Reset(); err != nil {
		return DensityCell{}, err
	}
	var ids []string
	defer func() { err = errors.Join(err, s.deleteSandboxes(in, mc, ids)) }()
	start := func() (string, time.Duration, error) {
		s.runs++
		id := fmt.Sprintf("moat-bench-%d-%d", os.Getpid(), s.runs)
		ids = append(ids, id)
		spec := newSpec(w.Argv, s.data, false)
		// A cgroup of the bench's choosing, so that it knows where to
		// look: absolute, directly under each hierarchy's root, so that
		// deleting the container leaves no parent behind.
		spec.Linux.CgroupsPath = "/" + id
		if err := ocirun.WriteSpec(s.bundle, spec); err != nil {
			return id, 0, err
		}
		took, err := in.createStart(ctx, id, s.out)
		return id, took, err
	}
	warm, _, err := start()
	if err != nil {
		return DensityCell{}, fmt.Errorf("untimed sandbox: %w", err)
	}
	ids = ids[:0]
	if err := s.deleteSandboxes(in, mc, []string{warm}); err != nil {
		return DensityCell{}, err
	}
	dc := DensityCell{Sandboxes: n, Status: StatusOK}
	for range n {
		if ctx.Err() != nil {
			return dc, fmt.Errorf("after %d of %d sandboxes: %w", len(dc.StartMS), n, ctx.Err())
		}
		_, took, err := start()
		if err != nil {
			return dc, fmt.Errorf("sandbox %d of %d: %w", len(dc.StartMS)+1, n, err)
		}
		dc.StartMS = append(dc.StartMS, float64(took)/float64(time.Millisecond))
	}
	select {
	case <-time.After(densitySettle):
	case <-ctx.Done():
		return dc, ctx.Err()
	}
	for k, id := range ids {
		procs, cgroup, err := measureSandbox(in, mc, id)
		if err != nil {
			return dc, fmt.Errorf("sandbox %d of %d: %w", k+1, n, err)
		}
		if k == 0 {
			dc.Processes = procs
		}
		pss := 0.0
		for _, g := range procs {
			pss += g.PSSMiB
		}
		dc.PSSMiB = append(dc.PSSMiB, pss)
		dc.CgroupMiB = append(dc.CgroupMiB, cgroup)
	}
	dc.summarize()
	return dc, nil
}

// summarize fills in the cell's medians, percentiles and totals.
func (dc *DensityCell) summarize() {
	dc.StartP50, dc.StartP90 = Percentile(dc.StartMS, 50), Percentile(dc.StartMS, 90)
	dc.PSSMedian, dc.CgroupMedian = Percentile(dc.PSSMiB, 50), Percentile(dc.CgroupMiB, 50)
	for k := range dc.PSSMiB {
		dc.PSSTotal += dc.PSSMiB[k]
		dc.CgroupTotal += dc.CgroupMiB[k]
	}
}

// measureSandbox reads sandbox id's host processes, grouped by name, and
// its memory cgroup's usage in MiB.
func measureSandbox(in *instance, mc memoryCgroup, id string) ([]ProcessGroup, float64, error) {
	st, err := in.oci.State(id)
	if err != nil {
		return nil, 0, err
	}
	cgroup := "/" + id
	pids, err := sandboxProcs(mc, cgroup, st.Pid)
	if err != nil {
		return nil, 0, err
	}
	var groups []ProcessGroup
	for _, pid := range pids {
		p, err := readProcess(pid)
		if errors.Is(err, os.ErrNotExist) {
			continue // it exited since the listing, and costs nothing now
		}
		if err != nil {
			return nil, 0, err
		}
		k := slices.IndexFunc(groups, func(g ProcessGroup) bool { return g.Name == p.name })
		if k < 0 {
			groups = append(groups, ProcessGroup{Name: p.name})
			k = len(groups) - 1
		}
		g := &groups[k]
		g.Count++
		g.PSSMiB += float64(p.pss.total) / 1024
		g.AnonMiB += float64(p.pss.anon) / 1024
		g.FileMiB += float64(p.pss.file) / 1024
		g.ShmemMiB += float64(p.pss.shmem) / 1024
	}
	usage, err := mc.usage(cgroup)
	if err != nil {
		return nil, 0, err
	}
	return groups, float64(usage) / (1 << 20), nil
}

// deleteParallel is how many sandboxes are deleted at once: runsc takes
// about a second to delete one, mostly waiting for its sandbox to exit.
const deleteParallel = 10

// deleteSandboxes deletes containers ids and returns an error naming
// those whose cgroup is still there afterwards: a leftover of the runtime.
func (s *session) deleteSandboxes(in *instance, mc memoryCgroup, ids []string) error {
	var wg sync.WaitGroup
	sem := make(chan struct{}, deleteParallel)
	for _, id := range ids {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			in.forceDelete(id)
			<-sem
		}()
	}
	wg.Wait()
	var left []string
	for _, id := range ids {
		if _, err := os.Stat(mc.dir("/" + id)); err == nil {
			left = append(left, mc.dir("/"+id))
		}
	}
	if len(left) > 0 {
		return fmt.Errorf("%s left cgroups behind after delete: %s", in.Name, strings.Join(left, ", "))
	}
	return nil
}
