package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestPercentileIsTheNearestRank(t *testing.T) {
	var samples []float64
	for i := 100; i >= 1; i-- { // out of order: Percentile sorts
		samples = append(samples, float64(i))
	}
	for p, want := range map[float64]float64{50: 50, 95: 95, 99: 99, 100: 100, 0.5: 1} {
		if got := Percentile(samples, p); got != want {
			t.Errorf("p%v of 1..100 = %v, want %v", p, got, want)
		}
	}
	if got := Percentile([]float64{3, 1, 2}, 50); got != 2 {
		t.Errorf("p50 of 3 samples = %v, want the middle one, 2", got)
	}
	if got := Percentile([]float64{7}, 99); got != 7 {
		t.Errorf("p99 of one sample = %v, want it", got)
	}
	if samples[0] != 100 {
		t.Error("Percentile sorted the caller's samples")
	}
}

// fakeServe is E2B's control plane as moat serve answers it, with a pool
// that refills in the background a while after each hand-over, as moat
// serve's does: a client that does not wait for it gets booted sandboxes.
type fakeServe struct {
	mu            sync.Mutex
	size, ready   int
	alive         map[string]bool
	pool, boot    int
	created, fail int // fail: the create of this number (from 1) answers 500
	refill        sync.WaitGroup
}

func (f *fakeServe) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("X-API-Key") != "k" {
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	switch {
	case r.Method == "POST" && r.URL.Path == "/v2/sandboxes":
		var req struct {
			TemplateID string `json:"templateID"`
		}
		json.NewDecoder(r.Body).Decode(&req)
		f.created++
		if req.TemplateID != serveTemplate || f.created == f.fail {
			w.WriteHeader(http.StatusInternalServerError)
			return
		}
		if f.ready > 0 {
			f.ready--
			f.pool++
			f.refill.Add(1)
			go func() {
				defer f.refill.Done()
				time.Sleep(time.Millisecond) // a boot takes a while
				f.mu.Lock()
				f.ready++
				f.mu.Unlock()
			}()
		} else {
			f.boot++
		}
		id := fmt.Sprintf("sb%d", f.created)
		f.alive[id] = true
		w.WriteHeader(http.StatusCreated)
		fmt.Fprintf(w, `{"sandboxID":%q,"templateID":"base"}`, id)
	case r.Method == "DELETE" && strings.HasPrefix(r.URL.Path, "/sandboxes/"):
		id := strings.TrimPrefix(r.URL.Path, "/sandboxes/")
		if !f.alive[id] {
			w.WriteHeader(http.StatusNotFound)
			return
		}
		delete(f.alive, id)
		w.WriteHeader(http.StatusNoContent)
	case r.Method == "GET" && r.URL.Path == "/metrics":
		fmt.Fprintf(w, "# TYPE moat_serve_creates_total counter\n")
		fmt.Fprintf(w, "moat_serve_creates_total{outcome=\"pool\"} %d\nmoat_serve_creates_total{outcome=\"boot\"} %d\n", f.pool, f.boot)
		if f.size > 0 {
			fmt.Fprintf(w, "moat_serve_pool_ready{template=\"base\"} %d\n", f.ready)
		}
	default:
		w.WriteHeader(http.StatusNotFound)
	}
}

func startFake(t *testing.T, f *fakeServe) *e2bClient {
	t.Helper()
	f.alive = map[string]bool{}
	f.ready = f.size
	srv := httptest.NewServer(f)
	t.Cleanup(func() {
		srv.Close()
		f.refill.Wait()
	})
	return newE2BClient(srv.URL, "k")
}

func TestAWarmCellWaitsForAFullPoolBeforeEachBurstAndKillsEverySandbox(t *testing.T) {
	f := &fakeServe{size: 10}
	c := startFake(t, f)
	cr := measureCell(context.Background(), c, ServeCell{PoolWarm, 10}, 25, time.Minute)
	if cr.Status != StatusOK {
		t.Fatalf("cell failed: %s", cr.Reason)
	}
	// 25 timed creates in bursts of 10 are 3 bursts.
	if len(cr.Samples) != 30 || cr.PoolHits != 30 || cr.PoolMisses != 0 {
		t.Errorf("%d samples, %d pool hits, %d misses; want 30 creates all from the pool", len(cr.Samples), cr.PoolHits, cr.PoolMisses)
	}
	if !(cr.P50 > 0 && cr.P50 <= cr.P95 && cr.P95 <= cr.P99 && cr.P99 <= cr.Max) {
		t.Errorf("percentiles p50 %v p95 %v p99 %v max %v are not positive and ordered", cr.P50, cr.P95, cr.P99, cr.Max)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.alive) != 0 || f.created != 40 {
		t.Errorf("%d sandboxes alive after the cell, %d created; want none alive of 40 (one untimed burst)", len(f.alive), f.created)
	}
}

func TestAColdCellCountsEveryCreateAsBooted(t *testing.T) {
	f := &fakeServe{}
	c := startFake(t, f)
	cr := measureCell(context.Background(), c, ServeCell{PoolCold, 1}, 5, time.Minute)
	if cr.Status != StatusOK || len(cr.Samples) != 5 || cr.PoolHits != 0 || cr.PoolMisses != 5 {
		t.Errorf("got %s (%s), %d samples, %d hits, %d misses; want ok, 5 booted", cr.Status, cr.Reason, len(cr.Samples), cr.PoolHits, cr.PoolMisses)
	}
}

func TestAFailedCreateFailsTheCellAndItsBurstIsStillKilled(t *testing.T) {
	f := &fakeServe{fail: 13} // in the second timed burst
	c := startFake(t, f)
	cr := measureCell(context.Background(), c, ServeCell{PoolCold, 5}, 20, time.Minute)
	if cr.Status != StatusFailed || !strings.Contains(cr.Reason, "500") || cr.Samples != nil {
		t.Errorf("got %s (%q) with %d samples; want failed, saying 500, no samples", cr.Status, cr.Reason, len(cr.Samples))
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.alive) != 0 || f.created != 15 {
		t.Errorf("%d sandboxes alive, %d created; want none alive, and no burst after the failed one (15)", len(f.alive), f.created)
	}
}

func TestServeOutputFindsTheAddressInPiecesAndKeepsTheEnd(t *testing.T) {
	o := &serveOutput{listening: make(chan string, 1)}
	for _, piece := range []string{"moat serve: starting\nmoat serve: list", "ening on 127.0.0.1:4", "1234\n", "a\nb\nc\nd\n"} {
		o.Write([]byte(piece))
	}
	select {
	case addr := <-o.listening:
		if addr != "127.0.0.1:41234" {
			t.Errorf("address %q", addr)
		}
	default:
		t.Fatal("no address found")
	}
	if got, want := o.tail(), ": moat serve: listening on 127.0.0.1:41234 | a | b | c | d"; got != want {
		t.Errorf("tail %q, want %q", got, want)
	}
}

func TestOnlyOCIRuntimesServeAndMoatDoes(t *testing.T) {
	if _, err := ParseRuntimes([]byte(`[{"name": "c", "kind": "command", "binary": "x", "serves": true}]`)); err == nil {
		t.Error("a command runtime that serves was accepted")
	}
	rts, err := DefaultRuntimes()
	if err != nil {
		t.Fatal(err)
	}
	for _, rt := range rts {
		if want := rt.Kind == KindOCI && strings.HasPrefix(rt.Name, "moat"); rt.Serves != want {
			t.Errorf("%s serves: %v, want %v", rt.Name, rt.Serves, want)
		}
		if runsWorkload(rt.Kind, rt.Serves, Serve) != rt.Serves {
			t.Errorf("%s runs the serve workloads: %v, want %v", rt.Name, !rt.Serves, rt.Serves)
		}
	}
}

func TestServeSchedulePutsEachCellUnderEveryRuntimeInTurn(t *testing.T) {
	steps := serveSchedule(2)
	if len(steps) != 2*len(ServeCells) {
		t.Fatalf("%d steps for 2 runtimes, want %d", len(steps), 2*len(ServeCells))
	}
	for i, st := range steps {
		if st.Runtime != i%2 || st.Round != i/2+1 {
			t.Errorf("step %d is %+v, want runtime %d, round %d", i, st, i%2, i/2+1)
		}
	}
}

func TestMarkdownShowsAServeWorkloadsPercentilesPerCell(t *testing.T) {
	rep := fixedReport()
	rep.Workloads = append(rep.Workloads, WorkloadResult{
		Name: "e2b-create", Kind: Serve, What: "moat serve's create", Unit: "ms", Runs: 100, Status: StatusOK,
		Results: []Result{
			{Runtime: "runc", Status: StatusSkipped, Reason: "it serves no E2B API"},
			{Runtime: "moat", Status: StatusOK, Reproduce: "bin/moat-bench --runtime moat --workload e2b-create", Cells: []CellResult{
				{Pool: PoolCold, Concurrency: 10, Status: StatusOK, Samples: []float64{1}, P50: 105, P95: 140, P99: 151, Max: 160, PoolMisses: 100},
				{Pool: PoolWarm, Concurrency: 10, Status: StatusOK, Samples: []float64{1}, P50: 1.5, P95: 3.25, P99: 4.5, Max: 9, PoolHits: 100},
				{Pool: PoolWarm, Concurrency: 50, Status: StatusFailed, Reason: "POST /v2/sandboxes: 500"},
			}},
			{Runtime: "runsc", Status: StatusSkipped, Reason: "bin/runsc not found"},
			{Runtime: "native", Status: StatusSkipped, Reason: "it serves no E2B API"},
		},
	})
	var b bytes.Buffer
	writeMarkdown(&b, rep, "")
	md := b.String()
	for _, want := range []string{
		"| runtime | pool | at once | creates | p50 | p95 | p99 | max | from the pool | reproduce |",
		"| moat | cold | 10 | 1 | 105 | 140 | 151 | 160 | 0 of 100 | `bin/moat-bench --runtime moat --workload e2b-create` |",
		"| moat | warm | 10 | 1 | 1.50 | 3.25 | 4.50 | 9.00 | 100 of 100 |  |",
		"| moat | warm | 50 | failed: POST /v2/sandboxes: 500 |",
		"| runc | skipped: it serves no E2B API |",
		"100 timed creates per row",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("Markdown lacks %q:\n%s", want, md)
		}
	}
	var s bytes.Buffer
	WriteSummary(&s, rep)
	if !strings.Contains(s.String(), "moat         warm      10       1.50       3.25       4.50       9.00  100 of 100 from the pool") {
		t.Errorf("summary:\n%s", s.String())
	}
}
