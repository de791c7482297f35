package boot

import (
	"bytes"
	"strings"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/moat-sandbox/moat/internal/control"
	"github.com/moat-sandbox/moat/sentry/mm"
	"github.com/moat-sandbox/moat/sentry/net/netstack"
)

// hostProcess is what a platform's address space tells of the host
// process that runs it (systrap: the stub).
type hostProcess interface{ HostPID() int }

// maxCmdline bounds what ps reads of a process's arguments, as Linux's
// /proc/PID/cmdline reads a page at a time.
const maxCmdline = 4096

// processes lists the processes of one container of the sandbox (""
// its own, else one of the pod's others) for `moat ps`.
func (s *Sandbox) processes(container string) []control.ProcessInfo {
	var out []control.ProcessInfo
	for _, tg := range s.Kernel.ThreadGroups() {
		t := tg.Leader()
		if t == nil || tg.Container() != container {
			continue
		}
		c := t.Creds()
		c.Lock()
		uid := c.UID
		c.Unlock()
		user, sys := tg.CPUTime()
		info := control.ProcessInfo{PID: tg.PID(), PPID: s.Kernel.TaskIDsIn(s.Kernel.RootPIDNamespace(), t).PPID, UID: uid, Comm: t.Comm(),
			Started: t.StartTime().Sub(s.Kernel.BootTime()).Nanoseconds(), CPU: (user + sys).Nanoseconds(),
			Threads: len(tg.Tasks())}
		if m := t.MM(); m != nil {
			info.Cmdline = cmdline(m)
			if hp, ok := m.AddressSpace().(hostProcess); ok {
				info.HostPID = hp.HostPID()
			}
		}
		out = append(out, info)
	}
	return out
}

// cmdline reads a process's arguments as /proc/PID/cmdline gives them,
// joined with spaces as ps shows them.
func cmdline(m *mm.MemoryManager) string {
	start, end := m.Layout.ArgStart, m.Layout.ArgEnd
	if end <= start {
		return ""
	}
	buf := make([]byte, min(end-start, maxCmdline))
	n, _ := m.CopyIn(start, buf)
	return strings.Join(strings.Fields(string(bytes.ReplaceAll(buf[:n], []byte{0}, []byte{' '}))), " ")
}

// stats is what the sandbox uses now, from the kernel's own accounting:
// CPU time of the living processes and of those reaped, guest memory
// resident (each address space once) and charged, tasks, the limits, the
// OOM killer's kills and the allowlist's refusals.
func (s *Sandbox) stats() control.Stats {
	var st control.Stats
	seen := make(map[*mm.MemoryManager]bool)
	for _, tg := range s.Kernel.ThreadGroups() {
		user, sys := tg.CPUTime()
		cu := tg.ChildUsage()
		st.CPUUser += uint64((user + cu.User).Nanoseconds())
		st.CPUSystem += uint64((sys + cu.Sys).Nanoseconds())
		tasks := tg.Tasks()
		st.Pids += uint64(len(tasks))
		if len(tasks) > 0 {
			if m := tasks[0].MM(); m != nil && !seen[m] {
				seen[m] = true
				st.Memory += m.ResidentBytes()
			}
		}
	}
	l := s.Kernel.SandboxLimits()
	st.MemLimit, st.PidsLimit = l.MemoryMax, l.PidsMax
	st.Charged, st.OOMKills = s.Kernel.MemoryCurrent(), s.Kernel.MemoryEvents().OOMKill
	st.EgressDenied = netstack.EgressRefused(s.Kernel)
	return st
}

// update takes new resource limits (`moat update`) into the sandbox's
// own: what the guest sees and the sentry enforces (the CLI sets the host
// cgroup's). A lower memory limit than the guest uses runs the OOM killer.
func (s *Sandbox) update(r *specs.LinuxResources) error {
	limits, err := sandboxLimits(s.Kernel.SandboxLimits(), r, s.hostCPUs)
	if err != nil {
		return err
	}
	s.Kernel.SetSandboxLimits(limits)
	return nil
}
