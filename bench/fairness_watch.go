package bench

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

// watchInterval is how often the watch samples the neighbours' cgroups: a
// memory bomb touches about 2 GiB/s here, so a limit that does not hold
// is caught within some 40 MiB.
const watchInterval = 20 * time.Millisecond

// neighbourWatch samples the neighbours' memory and pids cgroups while
// they run, keeps the peaks, and cancels the cell as soon as one is
// charged more than its limit and memoryAbortSlack: the host's memory
// must not depend on the runtime under test enforcing a limit.
type neighbourWatch struct {
	mem      memoryCgroup
	pids     cgroupHierarchy
	paths    []string // the neighbours' cgroups
	peakMem  []uint64
	peakPids []uint64
	stop     chan struct{}
	done     chan struct{}
	once     sync.Once
}

// watchNeighbours starts sampling the cgroups at paths; abort cancels the
// cell with the reason.
func watchNeighbours(mem memoryCgroup, pids cgroupHierarchy, paths []string, abort context.CancelCauseFunc) *neighbourWatch {
	w := &neighbourWatch{mem: mem, pids: pids, paths: paths, peakMem: make([]uint64, len(paths)),
		peakPids: make([]uint64, len(paths)), stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(w.done)
		t := time.NewTicker(watchInterval)
		defer t.Stop()
		for {
			if err := w.sample(); err != nil {
				abort(err)
				return
			}
			select {
			case <-w.stop:
				return
			case <-t.C:
			}
		}
	}()
	return w
}

// sample reads each neighbour's cgroups once. A cgroup that is gone is a
// sandbox that died (the end of the cell says so), not an error.
func (w *neighbourWatch) sample() error {
	for k, path := range w.paths {
		usage, err := w.mem.usage(path)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		w.peakMem[k] = max(w.peakMem[k], usage)
		if usage > fairnessMemory+memoryAbortSlack {
			return fmt.Errorf("a neighbour's memory cgroup %s is charged %d MiB, above its limit of %d MiB: aborted",
				w.mem.dir(path), usage>>20, fairnessMemory>>20)
		}
		n, err := w.pids.counter(path, "pids.current")
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		w.peakPids[k] = max(w.peakPids[k], n)
	}
	return nil
}

// finish stops the watch and returns the peaks, per neighbour: memory in
// bytes, and tasks. It may be called again.
func (w *neighbourWatch) finish() (mem, pids []uint64) {
	w.once.Do(func() { close(w.stop) })
	<-w.done
	return w.peakMem, w.peakPids
}

// cpuSampler reads a sandbox's CPU time while it runs: its cgroup goes
// with it, so the last reading before the end stands for the whole (less
// at most a watchInterval of it).
type cpuSampler struct {
	last time.Duration
	stop chan struct{}
	done chan struct{}
}

// sampleCPU starts reading the CPU time of the cgroup at path of h, which
// may not exist yet.
func sampleCPU(h cgroupHierarchy, path string) *cpuSampler {
	c := &cpuSampler{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(c.done)
		t := time.NewTicker(watchInterval)
		defer t.Stop()
		for {
			if used, err := cpuTime(h, path); err == nil {
				c.last = used
			}
			select {
			case <-c.stop:
				return
			case <-t.C:
			}
		}
	}()
	return c
}

// finish stops the sampler and returns the last CPU time it read.
func (c *cpuSampler) finish() time.Duration {
	close(c.stop)
	<-c.done
	return c.last
}

// cpuAccounting is the hierarchy whose cgroups count their CPU time:
// cpuacct on v1, cpu on v2.
func cpuAccounting() (cgroupHierarchy, error) {
	h, err := findHierarchy("cpuacct")
	if err != nil {
		return findHierarchy("cpu")
	}
	return h, nil
}

// cpuTime is the CPU time the cgroup at path has used: cpuacct.usage
// (ns) on v1, cpu.stat's usage_usec on v2.
func cpuTime(h cgroupHierarchy, path string) (time.Duration, error) {
	if !h.v2 {
		ns, err := h.counter(path, "cpuacct.usage")
		return time.Duration(ns), err
	}
	f, err := os.Open(h.dir(path) + "/cpu.stat")
	if err != nil {
		return 0, fmt.Errorf("cgroup: %w", err)
	}
	defer f.Close()
	return parseCPUStat(f.Name(), bufio.NewScanner(f))
}

// parseCPUStat finds usage_usec in a v2 cpu.stat.
func parseCPUStat(name string, sc *bufio.Scanner) (time.Duration, error) {
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "usage_usec "); ok {
			us, err := strconv.ParseUint(v, 10, 64)
			if err != nil {
				return 0, fmt.Errorf("%s: %w", name, err)
			}
			return time.Duration(us) * time.Microsecond, nil
		}
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	return 0, fmt.Errorf("%s has no usage_usec", name)
}
