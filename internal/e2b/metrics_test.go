package e2b

import (
	"strings"
	"testing"
	"time"
)

func TestMetricsCountCreatesByOutcomeAndBucketTheirLatency(t *testing.T) {
	m := newMetrics()
	m.created(createdFromPool, 20*time.Microsecond)
	m.created(createdByBoot, 80*time.Millisecond)
	m.created(createFailed, time.Second)
	m.killed(4)
	m.killed(1)
	var b strings.Builder
	m.write(&b, 2, []poolGauge{{template: "base", ready: 3, target: 4}}, 2)
	out := b.String()
	for _, line := range []string{
		"moat_serve_sandboxes_running 2",
		`moat_serve_creates_total{outcome="pool"} 1`,
		`moat_serve_creates_total{outcome="boot"} 1`,
		`moat_serve_creates_total{outcome="error"} 1`,
		`moat_serve_create_seconds_bucket{le="0.0001"} 1`,
		`moat_serve_create_seconds_bucket{le="0.05"} 1`,
		`moat_serve_create_seconds_bucket{le="0.1"} 2`,
		`moat_serve_create_seconds_bucket{le="+Inf"} 2`,
		"moat_serve_create_seconds_count 2",
		`moat_serve_pool_ready{template="base"} 3`,
		`moat_serve_pool_target{template="base"} 4`,
		// The killed sandboxes' refusals and the running ones'.
		"moat_serve_egress_denied_total 7",
	} {
		if !strings.Contains(out, line+"\n") {
			t.Errorf("no line %q in\n%s", line, out)
		}
	}
}
