package bench

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// A Serve workload measures moat serve (internal/e2b), the server that
// speaks E2B's API, over that API as E2B's SDKs call it. e2b-create's
// figure is what an agent platform waits for when it asks for a sandbox:
// POST /v2/sandboxes, from the request's start to its response's last
// byte, in bursts of 1, 10 and 50 creates at once, with a pool of booted
// sandboxes as large as a burst (warm) and with none (cold). A burst's
// sandboxes are killed (DELETE) before the next burst starts, and a warm
// burst waits until the pool is full again, so that every burst meets the
// same server. Each condition gets a server of its own, stopped after its
// last burst: what it leaves behind is a failure, and is swept.

// Pools of a serve cell.
const (
	PoolWarm = "warm" // the server keeps a burst's worth of sandboxes booted ahead
	PoolCold = "cold" // the server boots each sandbox when it is asked for
)

// ServeCell is one condition a Serve workload is measured in.
type ServeCell struct {
	Pool        string
	Concurrency int // creates in flight at once
}

// ServeCells are the conditions of e2b-create, in report order.
var ServeCells = []ServeCell{
	{PoolCold, 1}, {PoolCold, 10}, {PoolCold, 50},
	{PoolWarm, 1}, {PoolWarm, 10}, {PoolWarm, 50},
}

// DefaultServeCreates is how many timed creates a cell makes when
// Config.Runs is 0: with 100, the 99th percentile is the second slowest
// create, not the slowest.
const DefaultServeCreates = 100

// CellResult is one serve cell under one runtime. The percentiles are in
// the workload's unit (ms), by the nearest rank (Percentile).
type CellResult struct {
	Pool        string    `json:"pool"`
	Concurrency int       `json:"concurrency"`
	Status      string    `json:"status"`
	Reason      string    `json:"reason,omitempty"`
	Samples     []float64 `json:"samples,omitempty"` // timed creates, burst by burst
	P50         float64   `json:"p50,omitempty"`
	P95         float64   `json:"p95,omitempty"`
	P99         float64   `json:"p99,omitempty"`
	Max         float64   `json:"max,omitempty"`
	// PoolHits and PoolMisses are the server's own count (its metrics) of
	// the timed creates it handed over from its pool and those it booted.
	PoolHits   int `json:"pool_hits"`
	PoolMisses int `json:"pool_misses"`
}

// serveTemplate is the template every serve workload's server has: the
// session's rootfs.
const serveTemplate = "base"

// sandboxTimeout is the timeout, in seconds, each created sandbox is
// asked for: far longer than a cell, so that none dies before its burst
// kills it.
const sandboxTimeout = 3600

// measureCell measures cell against the server c calls: one untimed burst,
// which opens the connections the timed ones reuse, boots what the first
// sandbox of a server boots and shows a warm pool the demand it grows to
// (moat serve's pool keeps the busiest second's worth of the last minute),
// then bursts, each with the pool full again, until creates are timed.
// timeout bounds each request and each wait for the pool. Every sandbox a
// burst created is killed, whatever else fails.
func measureCell(ctx context.Context, c *e2bClient, cell ServeCell, creates int, timeout time.Duration) CellResult {
	cr := CellResult{Pool: cell.Pool, Concurrency: cell.Concurrency, Status: StatusOK}
	fail := func(err error) CellResult {
		cr.Status, cr.Reason = StatusFailed, err.Error()
		cr.Samples = nil
		return cr
	}
	if _, err := c.burst(ctx, cell, false, timeout); err != nil {
		return fail(fmt.Errorf("untimed burst: %w", err))
	}
	before, err := c.creates(ctx)
	if err != nil {
		return fail(err)
	}
	for len(cr.Samples) < creates {
		took, err := c.burst(ctx, cell, true, timeout)
		if err != nil {
			return fail(err)
		}
		cr.Samples = append(cr.Samples, took...)
	}
	after, err := c.creates(ctx)
	if err != nil {
		return fail(err)
	}
	cr.PoolHits, cr.PoolMisses = after.pool-before.pool, after.boot-before.boot
	cr.P50, cr.P95, cr.P99 = Percentile(cr.Samples, 50), Percentile(cr.Samples, 95), Percentile(cr.Samples, 99)
	cr.Max = Percentile(cr.Samples, 100)
	return cr
}

// burst waits for a warm cell's pool to be full (if full), creates
// cell.Concurrency sandboxes at once, kills them, and returns each
// create's time in ms.
func (c *e2bClient) burst(ctx context.Context, cell ServeCell, full bool, timeout time.Duration) ([]float64, error) {
	if cell.Pool == PoolWarm && full {
		if err := c.waitPool(ctx, serveTemplate, cell.Concurrency, timeout); err != nil {
			return nil, err
		}
	}
	n := cell.Concurrency
	ids := make([]string, n)
	took := make([]float64, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	gate := make(chan struct{})
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-gate
			rctx, cancel := context.WithTimeout(ctx, timeout)
			defer cancel()
			var d time.Duration
			ids[i], d, errs[i] = c.create(rctx, serveTemplate)
			took[i] = float64(d) / float64(time.Millisecond)
		}()
	}
	close(gate)
	wg.Wait()
	err := errors.Join(errs...)
	for i, id := range ids {
		if id == "" {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			// The kill runs even when ctx has ended: it is the clean-up.
			kctx, cancel := context.WithTimeout(context.Background(), timeout)
			defer cancel()
			errs[i] = c.kill(kctx, id)
		}()
	}
	wg.Wait()
	if err = errors.Join(err, errors.Join(errs...)); err != nil {
		return nil, err
	}
	return took, nil
}
