package state

import "fmt"

// Status is where a container is in the runtime-spec lifecycle.
type Status string

// The runtime-spec statuses, with runc's "paused".
const (
	Creating Status = "creating" // `moat create` is still setting the sandbox up
	Created  Status = "created"  // the sandbox is ready, the program has not run
	Running  Status = "running"  // `moat start` succeeded and the sentry lives
	Paused   Status = "paused"   // `moat pause`: no guest thread runs until `moat resume`
	Stopped  Status = "stopped"  // the sentry is gone
)

// next is the lifecycle: the statuses a container may move to from each
// status. Every decision below reads this table, so that the lifecycle is
// spelled out once.
var next = map[Status][]Status{
	Creating: {Created, Stopped},
	Created:  {Running, Stopped},
	Running:  {Paused, Stopped},
	Paused:   {Running, Stopped},
	Stopped:  nil, // only deletion follows
}

// CanBecome reports whether the lifecycle allows a move from s to to.
func (s Status) CanBecome(to Status) bool {
	for _, allowed := range next[s] {
		if allowed == to {
			return true
		}
	}
	return false
}

// CheckStart says why a container in status s cannot be started, with the
// words runc uses, or returns nil.
func CheckStart(s Status) error {
	if s.CanBecome(Running) {
		return nil
	}
	switch s {
	case Running:
		return fmt.Errorf("cannot start an already running container")
	case Stopped:
		return fmt.Errorf("cannot start a container that has stopped")
	default:
		return fmt.Errorf("cannot start a container in the %s state", s)
	}
}

// CheckPause says why a container in status s cannot be paused, in
// runc's words, or returns nil.
func CheckPause(s Status) error {
	if s == Running {
		return nil
	}
	return fmt.Errorf("container not running")
}

// CheckResume says why a container in status s cannot be resumed.
func CheckResume(s Status) error {
	if s == Paused {
		return nil
	}
	return fmt.Errorf("container not paused")
}

// CheckExec says why no process can be started in a container in status
// s, in runc's words, or returns nil.
func CheckExec(s Status) error {
	switch s {
	case Created, Running:
		return nil
	case Paused:
		return fmt.Errorf("cannot exec in a paused container")
	case Stopped:
		return fmt.Errorf("cannot exec in a stopped container")
	default:
		return fmt.Errorf("cannot exec in a container in the %s state", s)
	}
}

// CheckKill says why a container in status s cannot receive a signal, or
// returns nil. Anything that can still stop can be signalled.
func CheckKill(s Status) error {
	if s.CanBecome(Stopped) {
		return nil
	}
	return fmt.Errorf("container not running")
}

// CheckDelete says why the container id in status s cannot be deleted
// without force, or returns nil. Only a running program blocks deletion: a
// container that never ran it (creating, created) may be deleted, as runc
// allows, and deletion stops it first.
func CheckDelete(id string, s Status) error {
	if s == Running || s == Paused {
		return fmt.Errorf("cannot delete container %s that is not stopped: %s", id, s)
	}
	return nil
}
