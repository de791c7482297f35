package main

import (
	"encoding/json"
	"fmt"
	"os"
	"time"

	"github.com/moat-sandbox/moat/internal/cgroups"
	"github.com/moat-sandbox/moat/internal/control"
	"github.com/moat-sandbox/moat/internal/state"
)

var eventsCommand = &command{
	name:    "events",
	args:    "<container-id>",
	minArgs: 1, maxArgs: 1,
	summary: "print a container's resource use as JSON events",
	detail: `
Each event is one line of runc's JSON: {"type":"stats","id":...,"data":...}
with the CPU time, memory and tasks the sandbox uses, from the sentry's own
accounting (guest memory resident, each address space once), and under
"host" the same of the sandbox's host cgroup, in runc's shape: what the
sentry, its stubs and the gofer cost the host. With --stats
one event is printed; otherwise one every --interval until the container
stops, and an {"type":"oom"} event, as runc sends, each time the sentry's
OOM killer has killed a guest process (looked for every second, or every
--interval if that is shorter). Init killed so ends the container: the
sentry is gone with it, and its exit status, 137, tells.`,
	setup: func(o *options) func(*globalOptions, []string) error {
		var stats bool
		interval := "5s"
		o.Bool(&stats, "stats", "print the container's stats once and exit")
		o.String(&interval, "interval", "DURATION", "5s", "how often to print stats")
		return func(g *globalOptions, args []string) error {
			d, err := time.ParseDuration(interval)
			if err != nil || d <= 0 {
				return fmt.Errorf("invalid --interval %q: want a positive duration such as 5s", interval)
			}
			return containerEvents(g, args[0], stats, d)
		}
	},
}

// statsEvent is runc's event with the parts of its stats moat fills.
type statsEvent struct {
	Type string     `json:"type"`
	ID   string     `json:"id"`
	Data *statsData `json:"data,omitempty"`
}

type statsData struct {
	CPU    cpuStats    `json:"cpu"`
	Memory memoryStats `json:"memory"`
	Pids   pidsStats   `json:"pids"`
	// Host is the sandbox's host cgroup's use, in runc's shape: what the
	// sandbox costs the host (sentry, stubs and gofer), where the fields
	// above are what its guest uses.
	Host *cgroups.Stats `json:"host,omitempty"`
	// EgressDenied is how many attempts to leave the sandbox its
	// allowlist (dev.moat.net-allow) refused; runc has no such figure.
	EgressDenied uint64 `json:"egress_denied,omitempty"`
}

type cpuStats struct {
	Usage struct {
		Total  uint64 `json:"total"`
		Kernel uint64 `json:"kernel"`
		User   uint64 `json:"user"`
	} `json:"usage"`
	Throttling struct{} `json:"throttling"`
}

type memoryStats struct {
	Usage struct {
		Limit uint64 `json:"limit"`
		Usage uint64 `json:"usage"`
	} `json:"usage"`
}

type pidsStats struct {
	Current uint64 `json:"current"`
	Limit   uint64 `json:"limit,omitempty"`
}

// oomPoll is how often a streaming `events` looks for OOM kills.
const oomPoll = time.Second

func containerEvents(g *globalOptions, id string, once bool, interval time.Duration) error {
	enc := json.NewEncoder(os.Stdout)
	poll := min(interval, oomPoll)
	var kills uint64
	var lastStats time.Time
	for first := true; ; first = false {
		ev, oomKills, running, err := statsOf(g, id)
		if err != nil {
			return err
		}
		if !running {
			if once {
				return fmt.Errorf("container is not running")
			}
			return nil
		}
		if !first && oomKills > kills {
			if err := enc.Encode(statsEvent{Type: "oom", ID: id}); err != nil {
				return err
			}
		}
		kills = oomKills
		if now := time.Now(); now.Sub(lastStats) >= interval {
			if err := enc.Encode(ev); err != nil {
				return err
			}
			lastStats = now
		}
		if once {
			return nil
		}
		time.Sleep(poll)
	}
}

// statsOf asks the sentry for the container's use and how many guest
// processes its OOM killer has killed; running is false once it has
// stopped. The lock is held only for the question.
func statsOf(g *globalOptions, id string) (_ statsEvent, oomKills uint64, running bool, _ error) {
	dir, c, err := openContainer(g, id)
	if err != nil {
		return statsEvent{}, 0, false, err
	}
	defer dir.Close()
	if st := c.Status(); st != state.Running && st != state.Paused && st != state.Created {
		return statsEvent{}, 0, false, nil
	}
	resp, err := callContainer(g, dir, c, control.Request{Op: control.OpStats}, controlTimeout)
	if err != nil || resp.Stats == nil {
		if !c.Sentry.Alive() {
			return statsEvent{}, 0, false, nil
		}
		return statsEvent{}, 0, false, fmt.Errorf("stats of container %s: %w", id, err)
	}
	s := resp.Stats
	d := &statsData{}
	d.CPU.Usage.User, d.CPU.Usage.Kernel = s.CPUUser, s.CPUSystem
	d.CPU.Usage.Total = s.CPUUser + s.CPUSystem
	d.Memory.Usage.Usage = s.Memory
	if r := c.Resources; r != nil && r.Memory != nil && r.Memory.Limit != nil && *r.Memory.Limit > 0 {
		d.Memory.Usage.Limit = uint64(*r.Memory.Limit)
	}
	d.Pids.Current = s.Pids
	d.EgressDenied = s.EgressDenied
	if r := c.Resources; r != nil && r.Pids != nil && r.Pids.Limit != nil && *r.Pids.Limit > 0 {
		d.Pids.Limit = uint64(*r.Pids.Limit)
	}
	if c.Cgroup != nil {
		if d.Host, err = c.Cgroup.Stats(); err != nil {
			return statsEvent{}, 0, false, fmt.Errorf("stats of container %s: %w", id, err)
		}
	}
	return statsEvent{Type: "stats", ID: id, Data: d}, s.OOMKills, true, nil
}
