// Package state keeps what moat knows about each container between CLI
// invocations: one directory per container under the root (--root) holding
// state.json and the sandbox's control socket, the lifecycle that says which
// command may act on a container in which status, and the exclusive lock on
// the directory that keeps two commands on one container from interleaving.
//
// It must never take a container's status from the record alone: the sentry
// process is the truth, and the record only says how far the CLI got. It
// must never signal a pid without first checking that the pid still names
// the process it recorded.
package state

import (
	"fmt"
	"time"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/moat-sandbox/moat/internal/cgroups"
)

// Container is the record in state.json.
type Container struct {
	ID          string            `json:"id"`
	Bundle      string            `json:"bundle"` // absolute
	Rootfs      string            `json:"rootfs"` // absolute
	Created     time.Time         `json:"created"`
	Annotations map[string]string `json:"annotations,omitempty"`
	// Recorded is how far the CLI got (creating, created or running);
	// Status combines it with the sentry's liveness.
	Recorded Status  `json:"status"`
	Sentry   Process `json:"sentry"` // its pid is the container's pid
	Gofer    Process `json:"gofer"`
	// Usernet is moat usernet, the host's side of a user-space network;
	// zero for a sandbox without one.
	Usernet Process `json:"usernet,omitzero"`
	// Pod, for a container of a pod that runs in the sentry of the pod's
	// sandbox container, is that container's id; Sentry is then the host
	// process that stands for the container's init (`moat exec-wait`),
	// and requests go to the pod's control socket naming this container.
	Pod string `json:"pod,omitempty"`
	// Cgroup is the sandbox's cgroup on the host, nil when it has none
	// (a caller other than root may run a sandbox without).
	Cgroup *cgroups.Cgroup `json:"cgroup,omitempty"`
	// Resources are the limits `moat update` set last, nil before.
	Resources *specs.LinuxResources `json:"resources,omitempty"`
	// Namespaces lists the config's namespaces that name a path to join
	// (the network namespace podman, CNI or a pod made), as recorded at
	// create.
	Namespaces []specs.LinuxNamespace `json:"namespaces,omitempty"`
	// Hooks are the config's lifecycle hooks: start and delete run theirs
	// from here, whatever became of the bundle.
	Hooks *specs.Hooks `json:"hooks,omitempty"`

	// Owner is the user owning the state directory, filled in on load.
	Owner string `json:"-"`
}

// Status derives the container's status as runc does: whatever the record
// says, a container whose sentry is gone, a zombie or a different process
// with the same pid has stopped.
func (c *Container) Status() Status {
	if !c.Sentry.Alive() {
		return Stopped
	}
	return c.Recorded
}

// Record notes that the CLI took the container to, if the lifecycle allows
// the move from what was recorded before. It looks at the record, not at the
// derived status: a sentry that dies right after `moat start` still leaves a
// record that says it was started. The caller saves the record.
func (c *Container) Record(to Status) error {
	if !c.Recorded.CanBecome(to) {
		return fmt.Errorf("container %s cannot go from %s to %s", c.ID, c.Recorded, to)
	}
	c.Recorded = to
	return nil
}
