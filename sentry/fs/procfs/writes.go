package procfs

import (
	"bytes"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/sentry/kernel"
	"github.com/moat-sandbox/moat/sentry/mm"
)

// The files of /proc/<pid> a process may write, with Linux's rules.

const (
	// commMax is how much of a write to comm counts: TASK_COMM_LEN less
	// the NUL.
	commMax = 15
	// numberMax is how much of a write to oom_score_adj or oom_adj counts:
	// Linux's PROC_NUMBUF less the NUL.
	numberMax = 12
)

func comm(t *kernel.Task) ([]byte, error) { return []byte(t.Comm() + "\n"), nil }

// writeComm names the task as Linux's comm_write does: the written bytes
// up to the first NUL, a newline included, and only from a thread of the
// same process (EINVAL otherwise).
func writeComm(t, w *kernel.Task, data []byte) error {
	if w.ThreadGroup() != t.ThreadGroup() {
		return unix.EINVAL
	}
	if i := bytes.IndexByte(data, 0); i >= 0 {
		data = data[:i]
	}
	t.SetComm(string(data))
	return nil
}

func oomScoreAdj(t *kernel.Task) ([]byte, error) {
	return []byte(strconv.Itoa(t.ThreadGroup().OOMScoreAdj()) + "\n"), nil
}

// parseNumber reads a written number as Linux's kstrtoint(strstrip(buf), 0)
// does: blanks around it, a 0x or 0 prefix for hexadecimal or octal;
// EINVAL for anything else, ERANGE past an int.
func parseNumber(data []byte) (int, error) {
	s := strings.TrimSpace(string(data))
	v, err := strconv.ParseInt(s, 0, 32)
	if err == nil {
		return int(v), nil
	}
	if ne, ok := err.(*strconv.NumError); ok && ne.Err == strconv.ErrRange {
		return 0, unix.ERANGE
	}
	return 0, unix.EINVAL
}

// writeOOMScoreAdj sets the process's oom_score_adj: a number in
// [-1000, 1000] (EINVAL otherwise), below the floor only with
// CAP_SYS_RESOURCE (EACCES).
func writeOOMScoreAdj(t, w *kernel.Task, data []byte) error {
	v, err := parseNumber(data)
	if err != nil {
		return err
	}
	if v < kernel.OOMScoreAdjMin || v > kernel.OOMScoreAdjMax {
		return unix.EINVAL
	}
	return t.ThreadGroup().SetOOMScoreAdj(v, false, hasCap(w, unix.CAP_SYS_RESOURCE))
}

// oomAdj is the legacy oom_adj, oom_score_adj scaled to [-17, 15] as
// Linux's oom_adj_read scales it.
func oomAdj(t *kernel.Task) ([]byte, error) {
	adj := t.ThreadGroup().OOMScoreAdj()
	v := adj * -kernel.OOMAdjMin / kernel.OOMScoreAdjMax
	if adj == kernel.OOMScoreAdjMax {
		v = kernel.OOMAdjMax
	}
	return []byte(strconv.Itoa(v) + "\n"), nil
}

// writeOOMAdj sets oom_score_adj through the legacy scale, as Linux's
// oom_adj_write: [-17, 15], 15 meaning 1000; without CAP_SYS_RESOURCE it
// may not go below the current value.
func writeOOMAdj(t, w *kernel.Task, data []byte) error {
	v, err := parseNumber(data)
	if err != nil {
		return err
	}
	if v < kernel.OOMAdjMin || v > kernel.OOMAdjMax {
		return unix.EINVAL
	}
	adj := v * kernel.OOMScoreAdjMax / -kernel.OOMAdjMin
	if v == kernel.OOMAdjMax {
		adj = kernel.OOMScoreAdjMax
	}
	return t.ThreadGroup().SetOOMScoreAdj(adj, true, hasCap(w, unix.CAP_SYS_RESOURCE))
}

// oomScore is what Linux's proc_oom_score prints: the process's badness
// (kernel.Badness) scaled to [0, 2000] then by two thirds, and 0 for a
// process the OOM killer may not pick (oom_score_adj -1000). As in a
// container, the pages it is weighed against are the host's RAM and swap,
// not the sandbox's limit, which only the OOM killer's own choice uses.
func oomScore(t *kernel.Task) ([]byte, error) {
	var si unix.Sysinfo_t
	if err := unix.Sysinfo(&si); err != nil {
		return nil, err
	}
	total := max((si.Totalram+si.Totalswap)*uint64(si.Unit)/mm.PageSize, 1)
	badness, ok := t.ThreadGroup().Badness(total)
	if !ok {
		return []byte("0\n"), nil
	}
	points := (1000 + badness*1000/int64(total)) * 2 / 3
	return []byte(strconv.FormatInt(points, 10) + "\n"), nil
}

// hasCap reports whether the task holds the capability in the sandbox's
// first user namespace.
func hasCap(t *kernel.Task, cap uint) bool {
	return t.Capable(cap)
}
