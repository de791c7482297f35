// Package control defines what the moat CLI and a sandbox's sentry say to
// each other: the one-time setup hand-over when `moat create` starts the
// sentry, and the requests (start, kill, exec, file operations) that later
// CLI invocations and `moat serve` send over the container's control
// socket.
//
// It must never carry anything the guest controls: every message here comes
// from the CLI, which is trusted.
package control

import (
	"fmt"
	"syscall"
	"time"

	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// File descriptors that `moat boot` (the sentry) inherits, beside the guest's
// stdio on 0, 1 and 2.
const (
	BootGoferFD   = 3 // SOCK_SEQPACKET to the gofer
	BootControlFD = 4 // listening unix stream socket at <state dir>/control.sock
	BootSetupFD   = 5 // unix stream socket: Setup in, one Response out
	// BootSpillFD is the unnamed host file an overlay root's upper layer
	// spills to, when Setup.OverlayMemory is set.
	BootSpillFD = 6
	// BootLogFD is the --log file, open for appending, when Setup.LogPath
	// is set: the confined sentry opens no file.
	BootLogFD = 7
	// BootKVMFD is /dev/kvm, open, when Setup.Platform is PlatformKVM:
	// the confined sentry cannot open it.
	BootKVMFD = 8
	// BootKeepLoadFD is the kept state that an overlay root's upper
	// layer starts from, open for reading, when Setup.Keep.Load is set;
	// BootKeepSaveFD the empty file, open for writing, that it is saved
	// to once the guest is done, when Setup.Keep is set (the format is
	// sentry/fs/overlay's keep.go). The CLI owns both files.
	BootKeepLoadFD = 9
	BootKeepSaveFD = 10
	// BootBindFD0 is the gofer socket of the first bind mount in
	// Setup.Binds, BootBindFD0+1 of the second, and so on.
	BootBindFD0 = 11
)

// The sockets that `moat gofer` serves on: the root file system's, then
// one per bind mount, in the order of its --bind flags.
const (
	GoferServeFD = 3
	GoferBindFD0 = 4
)

// Bind is a bind mount of a host directory or file: its index in
// Spec.Mounts, and where its source lies on the host, as the host's
// mountinfo says and the guest's shows it (as Linux shows a bind mount):
// the path within the file system that holds it, and that file system's
// source.
type Bind struct {
	Index      int    `json:"index"`
	HostRoot   string `json:"hostRoot,omitempty"`
	HostSource string `json:"hostSource,omitempty"`
}

// Setup is what `moat create` hands to the sentry once, over BootSetupFD.
// The sentry reads no host file: the bundle's config arrives here, parsed.
type Setup struct {
	ID        string      `json:"id"`
	Bundle    string      `json:"bundle"` // absolute path, for messages only
	Spec      *specs.Spec `json:"spec"`
	LogPath   string      `json:"logPath,omitempty"` // the log on BootLogFD, for messages
	LogFormat string      `json:"logFormat,omitempty"`
	Debug     bool        `json:"debug,omitempty"`
	// Binds are the bind mounts whose gofer sockets are on BootBindFD0
	// onwards, in this order.
	Binds []Bind `json:"binds,omitempty"`
	// RootfsWrites says where writes to a writable root go:
	// bundle.WritesOverlay (an upper layer in the sandbox, over the image
	// that the gofer serves read-only) or bundle.WritesHost.
	RootfsWrites string `json:"rootfsWrites,omitempty"`
	// OverlayMemory, for an overlay root, is how many bytes of the upper
	// layer's file data stay in memory; past them, data moves to the file
	// on BootSpillFD.
	OverlayMemory int64 `json:"overlayMemory,omitempty"`
	// Keep, for an overlay root, keeps its upper layer from one run to
	// the next (moat sandbox --keep).
	Keep *Keep `json:"keep,omitempty"`
	// Platform is how the sentry runs guest code: PlatformSystrap (the
	// default, also when empty) or PlatformKVM.
	Platform string `json:"platform,omitempty"`
	// HostCalls is what the sentry's seccomp filter does with a host call
	// outside its allowlist: "kill" (also when empty) or "log", the audit
	// mode (internal/confine).
	HostCalls string `json:"hostCalls,omitempty"`
	// SentryUser, if set, is the host uid and gid the sentry becomes once
	// confined: root starts it in a user namespace that maps every id to
	// itself, as root there.
	SentryUser *[2]uint32 `json:"sentryUser,omitempty"`
	// Network is the network namespace the sandbox joins (network.go),
	// nil for a new one: loopback only.
	Network *Network `json:"network,omitempty"`
}

// Keep is how an overlay root's upper layer is kept: saved to
// BootKeepSaveFD when the guest is done, and loaded from BootKeepLoadFD
// before anything else if Load.
type Keep struct {
	Load bool `json:"load,omitempty"`
	// Hide are directories that show nothing of the image, made so after
	// the load (overlay.Hide): what the guest writes in them is kept, as
	// everywhere else in the upper layer.
	Hide []KeepDir `json:"hide,omitempty"`
}

// KeepDir is a directory of Keep.Hide, with the mode and owner it is made
// with when the kept state has none there.
type KeepDir struct {
	Path string `json:"path"`
	Mode uint32 `json:"mode"`
	UID  uint32 `json:"uid"`
	GID  uint32 `json:"gid"`
}

// Platforms the sentry can run guest code on.
const (
	PlatformSystrap = "systrap"
	PlatformKVM     = "kvm"
)

// Request is one control-socket call.
type Request struct {
	Op string `json:"op"` // one of the Op constants
	// Container, in a pod's sentry, names the pod's container a start,
	// kill, exec or ps is for (one that OpCreate made); "" is the
	// sandbox's own, the container the sentry was booted for.
	Container string `json:"container,omitempty"`
	Signal    int    `json:"signal,omitempty"` // OpKill, OpSignal: signal number
	All       bool   `json:"all,omitempty"`    // OpKill: every process of the container
	// Exec is what OpExec starts; its descriptors come with the request
	// (SCM_RIGHTS, see Conn).
	Exec *Exec `json:"exec,omitempty"`
	// Create is the container OpCreate makes; its descriptors come with
	// the request.
	Create *Create `json:"create,omitempty"`
	// Resources are OpUpdate's new limits.
	Resources *specs.LinuxResources `json:"resources,omitempty"`
	// File is a file operation's (files.go).
	File *FileOp `json:"file,omitempty"`
	// Egress is OpEgress's new allowlist.
	Egress *Egress `json:"egress,omitempty"`
	// Port is the guest's TCP port OpConnect connects to.
	Port int `json:"port,omitempty"`
}

// Egress is a running sandbox's new allowlist (OpEgress): every
// destination (All), or only what Allow lists, in the entries of the
// dev.moat.net-allow annotation (none: the sandbox reaches only itself).
type Egress struct {
	All   bool     `json:"all,omitempty"`
	Allow []string `json:"allow,omitempty"`
}

// Control operations.
const (
	OpStart = "start"
	OpKill  = "kill"
	// OpExec starts a process in the running sandbox. The connection then
	// stays open: the sentry answers once with the process's pid, and
	// once more with its exit status when it ends; meanwhile the CLI may
	// send OpSignal requests for it (no answer). A connection that closes
	// before the process ends kills it, so that a killed `moat exec`
	// leaves nothing running.
	OpExec = "exec"
	// OpCreate makes another container of a pod in the running sandbox
	// of the pod's sandbox container: a mount tree of its own from the
	// gofer sockets the request brings, and its init, which runs on an
	// OpStart naming it. The connection then serves that init as OpExec's
	// serves its process: the pid, OpSignal requests, the exit status,
	// and a connection that closes first ends every process of the
	// container.
	OpCreate = "create"
	OpSignal = "signal"
	OpPause  = "pause"
	OpResume = "resume"
	OpPs     = "ps"    // the guest's processes
	OpStats  = "stats" // what the sandbox uses
	OpUpdate = "update"
	// OpEgress replaces the allowlist of a sandbox with a network, for the
	// connections, datagrams and DNS queries that follow.
	OpEgress = "egress"
	// OpConnect connects to a TCP port the guest listens on (on its
	// loopback, 127.0.0.1 or ::1) from inside the sandbox's network
	// stack, for a server that passes traffic to the sandbox's ports
	// (moat serve's getHost URLs) without a host port. The request brings
	// one end of a host stream socket; once the sentry answers without an
	// error, the bytes of that socket are the connection's until either
	// side closes.
	OpConnect = "connect"
)

// Exec is a process for OpExec. Its descriptors travel with the request:
// Stdio of them are fds 0, 1 and 2 (one, when Process.Terminal is set:
// the replica of the host terminal the CLI made, which the sentry joins
// to a terminal of its own), the rest become fds 3 onwards.
type Exec struct {
	Process *specs.Process `json:"process"`
	Stdio   int            `json:"stdio"`
}

// Create is a container for OpCreate. Its descriptors travel with the
// request: Stdio of them as for Exec, then the gofer socket of its root
// file system, then one per bind mount in Binds, in that order.
type Create struct {
	ID    string      `json:"id"`
	Spec  *specs.Spec `json:"spec"`
	Binds []Bind      `json:"binds,omitempty"`
	// RootfsWrites is as in Setup; an overlay's upper layer stays in
	// memory (a container of a pod has no spill file).
	RootfsWrites string `json:"rootfsWrites,omitempty"`
	Stdio        int    `json:"stdio"`
}

// Response answers a Setup (the sandbox is ready, or why not) or a Request.
type Response struct {
	Error string `json:"error,omitempty"`
	// Errno is the Linux errno of a file operation that failed, or of the
	// exec of a program that could not be run.
	Errno int `json:"errno,omitempty"`
	// Unrunnable, in the answer to a Setup, says that its program could
	// not be run (Errno says why: ENOENT, not found), not the sandbox.
	Unrunnable bool `json:"unrunnable,omitempty"`
	// OpExec: PID in the first answer, Exit (the host status: code, or
	// 128+N for signal N) in the second.
	PID  int  `json:"pid,omitempty"`
	Exit *int `json:"exit,omitempty"`
	// OpPs.
	Processes []ProcessInfo `json:"processes,omitempty"`
	// OpStats.
	Stats *Stats `json:"stats,omitempty"`
	// OpStat and OpRead: the one entry; OpList: every entry.
	Entries []FileEntry `json:"entries,omitempty"`
}

// ProcessInfo is one guest process as `moat ps` lists it.
type ProcessInfo struct {
	PID     int32  `json:"pid"` // in the sandbox
	PPID    int32  `json:"ppid"`
	UID     uint32 `json:"uid"`
	Comm    string `json:"comm"`
	Cmdline string `json:"cmdline"`
	// HostPID is the host process that runs its address space (a
	// systrap stub), 0 when the platform has none to show.
	HostPID int `json:"hostPid,omitempty"`
	// Started is when it started, in ns since the sandbox's boot; CPU its
	// user and system time in ns.
	Started int64 `json:"started"`
	CPU     int64 `json:"cpu"`
	Threads int   `json:"threads"`
}

// Stats is what the sandbox uses, from the sentry's own accounting.
type Stats struct {
	CPUUser   uint64 `json:"cpuUser"`   // ns
	CPUSystem uint64 `json:"cpuSystem"` // ns
	Memory    uint64 `json:"memory"`    // bytes of guest memory in use
	MemLimit  uint64 `json:"memLimit,omitempty"`
	Pids      uint64 `json:"pids"` // tasks
	PidsLimit uint64 `json:"pidsLimit,omitempty"`
	// Charged is memory.current as the sandbox's memory controller counts
	// it (anonymous memory touched, tmpfs, the page cache the sentry keeps
	// for the guest), the figure its limit applies to; OOMKills how many
	// processes its OOM killer has killed (memory.events oom_kill): each
	// one an "oom" event, as runc reports them.
	Charged  uint64 `json:"charged,omitempty"`
	OOMKills uint64 `json:"oomKills,omitempty"`
	// EgressDenied is how many attempts to leave the sandbox (connections,
	// datagrams, DNS queries) its allowlist refused.
	EgressDenied uint64 `json:"egressDenied,omitempty"`
}

// Err turns a Response into a Go error: an *Error.
func (r Response) Err() error {
	if r.Error == "" {
		return nil
	}
	return &Error{Msg: r.Error, Errno: syscall.Errno(r.Errno), Unrunnable: r.Unrunnable}
}

// Call sends req to the control socket at path and waits for the answer.
func Call(path string, req Request, timeout time.Duration) error {
	_, err := CallFor(path, req, timeout)
	return err
}

// CallFor is Call for a request whose answer carries more than success.
// The answer is read as every control message is (Conn.Receive), within
// MaxMessage.
func CallFor(path string, req Request, timeout time.Duration) (Response, error) {
	conn, err := Dial(path, timeout)
	if err != nil {
		return Response{}, err
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(timeout))
	if err := conn.Send(req); err != nil {
		return Response{}, fmt.Errorf("send %s request: %w", req.Op, err)
	}
	var resp Response
	files, err := conn.Receive(&resp)
	for _, f := range files {
		f.Close() // no answer of Call's passes descriptors
	}
	if err != nil {
		return Response{}, fmt.Errorf("read %s reply: %w", req.Op, err)
	}
	return resp, resp.Err()
}
