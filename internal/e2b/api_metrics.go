package e2b

import (
	"net/http"
	"time"

	"golang.org/x/sys/unix"
)

// metricJSON is one sample of GET /sandboxes/{id}/metrics, as E2B's
// openapi.yml has it.
type metricJSON struct {
	Timestamp     string  `json:"timestamp"`
	TimestampUnix int64   `json:"timestampUnix"`
	CPUCount      int     `json:"cpuCount"`
	CPUUsedPct    float64 `json:"cpuUsedPct"`
	MemUsed       uint64  `json:"memUsed"`
	MemTotal      uint64  `json:"memTotal"`
	DiskUsed      uint64  `json:"diskUsed"`
	DiskTotal     uint64  `json:"diskTotal"`
}

// cpuSample is a sandbox's CPU time when its metrics were last asked for.
type cpuSample struct {
	at  time.Time
	cpu time.Duration
}

// sandboxMetrics answers GET /sandboxes/{id}/metrics with one sample,
// taken now from what the sandbox's sentry counts (E2B samples every few
// seconds and answers the samples between start and end; nothing is kept
// here between calls but the last CPU time): the CPU the sandbox used
// since the previous call (since its start, for the first) over the
// host's CPUs, which a sandbox of moat serve may all use; the guest's
// memory in use against its limit, or the host's memory when it has none.
// There is no disk: the sandbox's writes are in its overlay, in memory
// (memUsed counts them), so diskUsed and diskTotal are 0.
func (s *Server) sandboxMetrics(w http.ResponseWriter, r *http.Request) {
	sb := s.pathSandbox(w, r)
	if sb == nil {
		return
	}
	st, err := sb.inst.stats(r.Context())
	if err != nil {
		apiError(w, http.StatusInternalServerError, "sandbox %s: %v", sb.id, err)
		return
	}
	now := time.Now().UTC()
	cpu := time.Duration(st.CPUUser + st.CPUSystem)
	sb.mu.Lock()
	last := sb.lastCPU
	if last.at.IsZero() {
		last = cpuSample{at: sb.startedAt}
	}
	sb.lastCPU = cpuSample{at: now, cpu: cpu}
	sb.mu.Unlock()
	m := metricJSON{Timestamp: now.Format(time.RFC3339), TimestampUnix: now.Unix(), CPUCount: s.cfg.Limits.CPUs,
		MemUsed: st.Memory, MemTotal: st.MemLimit}
	if elapsed := now.Sub(last.at); elapsed > 0 && cpu >= last.cpu {
		m.CPUUsedPct = 100 * float64(cpu-last.cpu) / float64(elapsed) / float64(m.CPUCount)
	}
	if m.MemTotal == 0 {
		var si unix.Sysinfo_t
		if unix.Sysinfo(&si) == nil {
			m.MemTotal = uint64(si.Totalram) * uint64(si.Unit)
		}
	}
	writeJSON(w, http.StatusOK, []metricJSON{m})
}
