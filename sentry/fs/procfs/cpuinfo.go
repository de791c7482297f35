package procfs

import (
	"bytes"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// hostCPUInfo is /proc/cpuinfo as the sandbox sees it, made once when the
// /proc is: the host's entries for the CPUs the sentry may run on (its
// sched_getaffinity set, which the guest's sched_getaffinity also
// reports, as CPUs 0 to n-1), numbered from 0. The figures that change
// (cpu MHz) are as they were then. Without the host's file, a stand-in
// with the CPU's feature flags.
func hostCPUInfo() []byte {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return syntheticCPUInfo()
	}
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		return syntheticCPUInfo()
	}
	var out bytes.Buffer
	n := 0
	for _, block := range strings.Split(strings.TrimRight(string(b), "\n"), "\n\n") {
		first, rest, _ := strings.Cut(block, "\n")
		key, val, ok := strings.Cut(first, ":")
		if !ok || strings.TrimSpace(key) != "processor" {
			continue
		}
		cpu, err := strconv.Atoi(strings.TrimSpace(val))
		if err != nil || !set.IsSet(cpu) {
			continue
		}
		fmt.Fprintf(&out, "processor\t: %d\n%s\n\n", n, rest)
		n++
	}
	if n != runtime.NumCPU() {
		return syntheticCPUInfo()
	}
	return out.Bytes()
}

// syntheticCPUInfo is a /proc/cpuinfo for as many CPUs as the sentry may
// use, with the feature flags programs choose code paths by.
func syntheticCPUInfo() []byte {
	var b strings.Builder
	n := runtime.NumCPU()
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "processor\t: %d\nvendor_id\t: moat\nmodel name\t: moat virtual CPU\n"+
			"physical id\t: 0\nsiblings\t: %d\ncore id\t\t: %d\ncpu cores\t: %d\nflags\t\t: %s\n\n",
			i, n, i, n, cpuFlags())
	}
	return []byte(b.String())
}

// firstCPUs is the part of a /proc/cpuinfo that describes its first n
// processors: a sandbox whose cpuset is smaller than the sentry's CPUs
// sees that many, numbered from 0 as its sched_getaffinity numbers them.
func firstCPUs(info []byte, n int) []byte {
	blocks := bytes.SplitAfter(info, []byte("\n\n"))
	if n >= len(blocks) {
		return info
	}
	return bytes.Join(blocks[:n], nil)
}
