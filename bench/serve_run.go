package bench

import (
	"context"
	"errors"
	"fmt"
	"strings"
)

// serveSchedule orders the cells of a serve workload under n runtimes,
// interleaved as Schedule orders rounds: Round i+1 is ServeCells[i]. There
// is no warm-up round: each cell starts with an untimed burst of its own.
func serveSchedule(runtimes int) []Step {
	var steps []Step
	for cell := range ServeCells {
		for rt := 0; rt < runtimes; rt++ {
			steps = append(steps, Step{Runtime: rt, Round: cell + 1})
		}
	}
	return steps
}

// measureServe runs a serve workload under every runtime that serves,
// each cell with a moat serve of its own.
func (s *session) measureServe(ctx context.Context, w Workload, p plan, runtimes []RuntimeInfo) (WorkloadResult, error) {
	wr, skipped := s.newResult(w, p)
	if skipped {
		return wr, nil
	}
	cells := make([][]CellResult, len(s.instances))
	for _, st := range p.steps {
		i := p.active[st.Runtime]
		in := s.instances[i]
		cell := ServeCells[st.Round-1]
		cr, err := s.serveCell(ctx, in, cell, p.runs)
		if ctx.Err() != nil {
			return wr, ctx.Err()
		}
		what := fmt.Sprintf("%s %s %s x%d", w.Name, in.Name, cell.Pool, cell.Concurrency)
		if err != nil {
			// The server failed to start or to stop cleanly: the figures
			// are not kept even if the bursts went through.
			cr.Status, cr.Samples = StatusFailed, nil
			cr.Reason = strings.TrimPrefix(cr.Reason+"; "+err.Error(), "; ")
		}
		cells[i] = append(cells[i], cr)
		if cr.Status != StatusOK {
			s.cfg.Progress.Note("%s: failed: %s", what, cr.Reason)
			s.cfg.Progress.Advance(1, what+": failed")
			continue
		}
		s.cfg.Progress.Advance(1, fmt.Sprintf("%s: p50 %s p99 %s %s", what, formatValue(cr.P50), formatValue(cr.P99), w.Unit))
	}
	wr.Results = s.cellResults(w, runtimes, func(i int, r *Result) { r.Cells = cells[i] })
	return wr, nil
}

// serveCell measures cell under in with a server of its own: a pool as
// large as a burst when the cell is warm, none when it is cold.
func (s *session) serveCell(ctx context.Context, in *instance, cell ServeCell, creates int) (_ CellResult, err error) {
	pool := 0
	if cell.Pool == PoolWarm {
		pool = cell.Concurrency
	}
	cr := CellResult{Pool: cell.Pool, Concurrency: cell.Concurrency}
	srv, err := s.startServe(ctx, in, fmt.Sprintf("%s-%d", cell.Pool, cell.Concurrency), pool, s.cfg.Timeout)
	if err != nil {
		return cr, err
	}
	defer func() { err = errors.Join(err, srv.stop()) }()
	return measureCell(ctx, srv.client, cell, creates, s.cfg.Timeout), nil
}
