package e2b

import (
	"fmt"
	"io"
	"net/http"
	"sort"
	"strconv"
	"sync"
	"time"
)

// metrics are the server's counters, served at GET /metrics in
// Prometheus' text format.
type metrics struct {
	mu      sync.Mutex
	creates map[string]uint64 // by how: pool, boot, error
	buckets []uint64          // create latency, per createBuckets bound
	count   uint64
	sum     float64
	// deniedGone are the egress refusals of the sandboxes killed so far
	// (the running ones' are asked for at each scrape).
	deniedGone uint64
}

// createBuckets are the create latency histogram's upper bounds, in
// seconds: a hand-over from a pool takes microseconds, a boot tens of
// milliseconds to seconds.
var createBuckets = []float64{0.0001, 0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10}

// Ways a create ends.
const (
	createdFromPool = "pool"
	createdByBoot   = "boot"
	createFailed    = "error"
)

func newMetrics() *metrics {
	return &metrics{creates: make(map[string]uint64), buckets: make([]uint64, len(createBuckets))}
}

// created counts one create that ended as how after took.
func (m *metrics) created(how string, took time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.creates[how]++
	if how == createFailed {
		return
	}
	s := took.Seconds()
	for i, bound := range createBuckets {
		if s <= bound {
			m.buckets[i]++
		}
	}
	m.count++
	m.sum += s
}

// killed counts a killed sandbox's egress refusals.
func (m *metrics) killed(denied uint64) {
	m.mu.Lock()
	m.deniedGone += denied
	m.mu.Unlock()
}

// poolGauge is one pool as the metrics show it now.
type poolGauge struct {
	template      string
	ready, target int
}

// write writes the metrics, with running sandboxes, the pools and the
// running sandboxes' egress refusals as they are now.
func (m *metrics) write(w io.Writer, running int, pools []poolGauge, deniedRunning uint64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	fmt.Fprintf(w, "# HELP moat_serve_sandboxes_running Sandboxes handed out and not yet killed.\n")
	fmt.Fprintf(w, "# TYPE moat_serve_sandboxes_running gauge\nmoat_serve_sandboxes_running %d\n", running)
	fmt.Fprintf(w, "# HELP moat_serve_creates_total Sandbox creates, by outcome: from a pool (a hit), booted (a miss, or no pool), or failed.\n")
	fmt.Fprintf(w, "# TYPE moat_serve_creates_total counter\n")
	for _, how := range []string{createdFromPool, createdByBoot, createFailed} {
		fmt.Fprintf(w, "moat_serve_creates_total{outcome=%q} %d\n", how, m.creates[how])
	}
	fmt.Fprintf(w, "# HELP moat_serve_create_seconds Time from a create request to its sandbox's registration.\n")
	fmt.Fprintf(w, "# TYPE moat_serve_create_seconds histogram\n")
	for i, bound := range createBuckets {
		fmt.Fprintf(w, "moat_serve_create_seconds_bucket{le=%q} %d\n", strconv.FormatFloat(bound, 'g', -1, 64), m.buckets[i])
	}
	fmt.Fprintf(w, "moat_serve_create_seconds_bucket{le=\"+Inf\"} %d\n", m.count)
	fmt.Fprintf(w, "moat_serve_create_seconds_sum %g\nmoat_serve_create_seconds_count %d\n", m.sum, m.count)
	sort.Slice(pools, func(i, j int) bool { return pools[i].template < pools[j].template })
	fmt.Fprintf(w, "# HELP moat_serve_pool_ready Sandboxes booted ahead and waiting, by template.\n")
	fmt.Fprintf(w, "# TYPE moat_serve_pool_ready gauge\n")
	for _, p := range pools {
		fmt.Fprintf(w, "moat_serve_pool_ready{template=%q} %d\n", p.template, p.ready)
	}
	fmt.Fprintf(w, "# HELP moat_serve_pool_target Sandboxes a pool keeps, by template: the busiest second of the last minute's creates, within 1 and --pool.\n")
	fmt.Fprintf(w, "# TYPE moat_serve_pool_target gauge\n")
	for _, p := range pools {
		fmt.Fprintf(w, "moat_serve_pool_target{template=%q} %d\n", p.template, p.target)
	}
	fmt.Fprintf(w, "# HELP moat_serve_egress_denied_total Attempts to leave a sandbox (connections, datagrams, DNS queries) its allowlist refused.\n")
	fmt.Fprintf(w, "# TYPE moat_serve_egress_denied_total counter\nmoat_serve_egress_denied_total %d\n", m.deniedGone+deniedRunning)
}

func (s *Server) serveMetrics(w http.ResponseWriter, r *http.Request) {
	pools := make([]poolGauge, 0, len(s.pools))
	for name, p := range s.pools {
		pools = append(pools, poolGauge{template: name, ready: len(p.ready), target: p.target()})
	}
	running := s.sandboxes.list()
	var denied uint64
	for _, sb := range running {
		denied += sb.egressDenied(r.Context())
	}
	w.Header().Set("Content-Type", "text/plain; version=0.0.4")
	s.metrics.write(w, len(running), pools, denied)
}
