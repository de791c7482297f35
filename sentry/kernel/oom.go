package kernel

import (
	"sync/atomic"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/sentry/mm"
)

// The OOM killer's knobs, as /proc/<pid>/oom_score_adj and oom_adj show
// and set them: kept, inherited by fork and checked as Linux checks them,
// and weighed by the sandbox's OOM killer (memcg.go) as Linux's
// oom_badness weighs them.

// Linux's bounds of oom_score_adj and the legacy oom_adj.
const (
	OOMScoreAdjMin = -1000
	OOMScoreAdjMax = 1000
	OOMAdjMin      = -17 // OOM_DISABLE
	OOMAdjMax      = 15
)

// oomScore packs a process's oom_score_adj (low 16 bits) and the least
// value it may be lowered to without CAP_SYS_RESOURCE (high 16 bits),
// Linux's signal->oom_score_adj and oom_score_adj_min, so that fork copies
// both at once.
type oomScore struct{ v atomic.Uint32 }

func packOOM(adj, min int16) uint32 { return uint32(uint16(adj)) | uint32(uint16(min))<<16 }

func (o *oomScore) get() (adj, min int16) {
	v := o.v.Load()
	return int16(uint16(v)), int16(uint16(v >> 16))
}

func (o *oomScore) inherit(from *oomScore) { o.v.Store(from.v.Load()) }

// OOMScoreAdj returns the process's oom_score_adj.
func (tg *ThreadGroup) OOMScoreAdj() int {
	adj, _ := tg.oom.get()
	return int(adj)
}

// SetOOMScoreAdj sets oom_score_adj to adj (already checked to lie in
// [OOMScoreAdjMin, OOMScoreAdjMax]) as Linux's __set_oom_adj does: without
// CAP_SYS_RESOURCE (privileged false) a value may not go below the floor,
// or, through the legacy oom_adj, below the current value (EACCES); a
// privileged write through oom_score_adj moves the floor to the new value.
func (tg *ThreadGroup) SetOOMScoreAdj(adj int, legacy, privileged bool) error {
	for {
		old := tg.oom.v.Load()
		cur, floor := int16(uint16(old)), int16(uint16(old>>16))
		limit := floor
		if legacy {
			limit = cur
		}
		if int16(adj) < limit && !privileged {
			return unix.EACCES
		}
		if !legacy && privileged {
			floor = int16(adj)
		}
		if tg.oom.v.CompareAndSwap(old, packOOM(int16(adj), floor)) {
			return nil
		}
	}
}

// Badness is Linux's oom_badness for the process: its resident pages
// (rss; the sentry keeps no swap of its own and its page tables are the
// host's, so those terms are nothing here) plus oom_score_adj
// thousandths of totalPages, at least 1. ok is false for a process the
// OOM killer may not pick: oom_score_adj -1000, or one with no task left.
func (tg *ThreadGroup) Badness(totalPages uint64) (points int64, ok bool) {
	adj := int64(tg.OOMScoreAdj())
	if adj == OOMScoreAdjMin {
		return 0, false
	}
	var m *mm.MemoryManager
	for _, t := range tg.Tasks() {
		if m = t.MM(); m != nil {
			break
		}
	}
	if m == nil {
		return 0, false
	}
	// Linux normalises totalPages to thousandths first, then scales.
	points = int64(m.ResidentBytes()/mm.PageSize) + adj*int64(totalPages/1000)
	return max(points, 1), true
}
