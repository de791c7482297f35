package bench

import (
	"bufio"
	"os"
	"runtime"
	"strings"
)

// Machine is what a reader needs to know to compare figures across reports.
type Machine struct {
	CPU    string `json:"cpu"`    // model name from /proc/cpuinfo
	CPUs   int    `json:"cpus"`   // usable by moat-bench, as nproc counts them
	Kernel string `json:"kernel"` // release, as uname -r prints it
	// The load averages around the session: figures measured while the
	// machine was busy with something else are to be read with care.
	LoadBefore string `json:"load_before"`
	LoadAfter  string `json:"load_after"`
}

func readMachine() Machine {
	return Machine{
		CPU:        cpuModel(),
		CPUs:       runtime.NumCPU(),
		Kernel:     firstLine("/proc/sys/kernel/osrelease"),
		LoadBefore: loadAverage(),
	}
}

func cpuModel() string {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return "unknown"
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return "unknown"
}

// loadAverage returns the 1, 5 and 15 minute load averages.
func loadAverage() string {
	f := strings.Fields(firstLine("/proc/loadavg"))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}

func firstLine(path string) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return "unknown"
	}
	line, _, _ := strings.Cut(string(data), "\n")
	return strings.TrimSpace(line)
}
