package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/moat-sandbox/moat/internal/control"
	"github.com/moat-sandbox/moat/internal/state"
)

var psCommand = &command{
	name:           "ps",
	args:           "<container-id> [ps options]",
	minArgs:        1,
	maxArgs:        -1,
	argsEndOptions: true,
	summary:        "list the processes running inside a container",
	detail: `
Every guest process runs its code in a host process of its own (a stub of
the systrap platform), which is the host pid moat reports for it: --format
json prints those pids, as runc prints the container's host pids, so that
tools that list them with the host's ps (docker top) find one per guest
process and nothing else. The table shows the guest's own view: its user,
the stub's pid, the parent's (the container's pid for init and for exec'd
processes, whose parent is outside), CPU time and command line. With ps
options after the id, moat runs the host's ps with them and keeps the lines
of those pids, as runc does.`,
	setup: func(o *options) func(*globalOptions, []string) error {
		var format string
		o.String(&format, "format,f", "FORMAT", "table", "table or json")
		return func(g *globalOptions, args []string) error {
			if format != "table" && format != "json" {
				return fmt.Errorf("invalid format option")
			}
			return psContainer(g, args[0], format, args[1:])
		}
	},
}

func psContainer(g *globalOptions, id, format string, psArgs []string) error {
	dir, c, err := openContainer(g, id)
	if err != nil {
		return err
	}
	defer dir.Close()
	var procs []control.ProcessInfo
	if st := c.Status(); st != state.Stopped {
		resp, err := callContainer(g, dir, c, control.Request{Op: control.OpPs}, controlTimeout)
		if err != nil {
			return fmt.Errorf("ps of container %s: %w", id, err)
		}
		procs = resp.Processes
	}
	hostPIDs := hostPIDsOf(procs)
	switch {
	case format == "json":
		if hostPIDs == nil {
			hostPIDs = []int{}
		}
		return json.NewEncoder(os.Stdout).Encode(hostPIDs)
	case len(psArgs) > 0:
		return hostPS(psArgs, hostPIDs)
	default:
		return writeProcessTable(procs, c.Sentry.PID)
	}
}

// hostPIDsOf lists each guest process's host pid once, in guest pid
// order (processes sharing an address space, a vfork child before its
// exec, share one).
func hostPIDsOf(procs []control.ProcessInfo) []int {
	var out []int
	for _, p := range procs {
		if p.HostPID > 0 && !slices.Contains(out, p.HostPID) {
			out = append(out, p.HostPID)
		}
	}
	return out
}

// writeProcessTable prints ps -ef's columns for the guest's processes.
func writeProcessTable(procs []control.ProcessInfo, sentryPID int) error {
	hostOf := make(map[int32]int)
	for _, p := range procs {
		hostOf[p.PID] = p.HostPID
	}
	w := tabwriter.NewWriter(os.Stdout, 0, 1, 2, ' ', 0)
	fmt.Fprint(w, "UID\tPID\tPPID\tC\tSTIME\tTTY\tTIME\tCMD\n")
	for _, p := range procs {
		ppid := sentryPID
		if p.PPID != 0 {
			ppid = hostOf[p.PPID]
		}
		cmd := p.Cmdline
		if cmd == "" {
			cmd = "[" + p.Comm + "]"
		}
		cpu := time.Duration(p.CPU) / time.Second
		fmt.Fprintf(w, "%d\t%d\t%d\t0\t-\t?\t%02d:%02d:%02d\t%s\n", p.UID, p.HostPID, ppid,
			cpu/3600, cpu/60%60, cpu%60, cmd)
	}
	return w.Flush()
}

// hostPS runs the host's ps with args and keeps its header and the lines
// of pids, finding the PID column by its header as runc does.
func hostPS(args []string, pids []int) error {
	out, err := exec.Command("ps", args...).Output()
	if err != nil {
		return fmt.Errorf("ps: %w", err)
	}
	lines := strings.Split(strings.TrimRight(string(out), "\n"), "\n")
	col := slices.Index(strings.Fields(lines[0]), "PID")
	if col < 0 {
		return fmt.Errorf("couldn't find PID field in ps output")
	}
	var buf bytes.Buffer
	buf.WriteString(lines[0] + "\n")
	for _, line := range lines[1:] {
		f := strings.Fields(line)
		if col >= len(f) {
			continue
		}
		if pid, err := strconv.Atoi(f[col]); err == nil && slices.Contains(pids, pid) {
			buf.WriteString(line + "\n")
		}
	}
	_, err = os.Stdout.Write(buf.Bytes())
	return err
}
