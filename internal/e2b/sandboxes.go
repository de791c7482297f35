package e2b

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// sandbox is one E2B sandbox: a moat container and what the API knows of
// it.
type sandbox struct {
	id         string
	templateID string
	rootfs     string // the template's tree, read for its users
	token      string // envd's access token
	metadata   map[string]string
	envVars    map[string]string
	imageEnv   []string // the template's image's (Config.TemplateEnv)
	startedAt  time.Time
	inst       *instance
	// created is the network it was booted with, which bounds what a
	// network update may give it (api_network.go). allowlisted: it has
	// had an allowlist, whose refusals the metrics count.
	created     egress
	allowlisted atomic.Bool
	// ingress is how its ports are reached (ports.go).
	ingress ingress

	// transition serialises pausing and resuming (api_pause.go).
	transition sync.Mutex

	mu        sync.Mutex
	paused    bool      // frozen, its timeout stopped
	autoPause bool      // its timeout pauses it rather than killing it
	lastCPU   cpuSample // at the last metrics call (api_metrics.go)
	endAt     time.Time
	timer     *time.Timer
	procs     map[uint32]*process
	watchers  map[string]*watcher
	dead      bool
	ports     *http.Transport // to its ports, made at first use (ports.go)

	names namesCache // of the sandbox's /etc/passwd and /etc/group
}

// registry holds the running sandboxes.
type registry struct {
	mu sync.Mutex
	m  map[string]*sandbox
}

func (r *registry) get(id string) *sandbox {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.m[id]
}

func (r *registry) add(sb *sandbox) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.m[sb.id] = sb
}

// take removes sandbox id and returns it, nil if it was not there: of two
// callers that kill the same sandbox, one does.
func (r *registry) take(id string) *sandbox {
	r.mu.Lock()
	defer r.mu.Unlock()
	sb := r.m[id]
	delete(r.m, id)
	return sb
}

// list is the sandboxes, oldest first.
func (r *registry) list() []*sandbox {
	r.mu.Lock()
	all := make([]*sandbox, 0, len(r.m))
	for _, sb := range r.m {
		all = append(all, sb)
	}
	r.mu.Unlock()
	sort.Slice(all, func(i, j int) bool {
		if !all[i].startedAt.Equal(all[j].startedAt) {
			return all[i].startedAt.Before(all[j].startedAt)
		}
		return all[i].id < all[j].id
	})
	return all
}

// randomID is an id of n lowercase letters and digits, as E2B's look.
func randomID(n int) string {
	const alphabet = "abcdefghijklmnopqrstuvwxyz0123456789"
	b := make([]byte, n)
	rand.Read(b)
	for i := range b {
		b[i] = alphabet[int(b[i])%len(alphabet)]
	}
	return string(b)
}

func randomToken() string {
	b := make([]byte, 32)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// guestUser is who a request acts as in the sandbox.
type guestUser struct {
	name     string
	uid, gid uint32
	home     string
}

// lookupUser finds name in the template's /etc/passwd: the image's own,
// not the sandbox's copy, which the guest may have rewritten. The empty
// name is root: E2B's default user ("user") is a thing of its images.
func (sb *sandbox) lookupUser(name string) (guestUser, error) {
	if name == "" {
		name = "root"
	}
	data, err := os.ReadFile(filepath.Join(sb.rootfs, "etc/passwd"))
	if err == nil {
		sc := bufio.NewScanner(bytes.NewReader(data))
		for sc.Scan() {
			f := strings.Split(sc.Text(), ":")
			if len(f) < 7 || f[0] != name {
				continue
			}
			uid, err1 := strconv.ParseUint(f[2], 10, 32)
			gid, err2 := strconv.ParseUint(f[3], 10, 32)
			if err1 != nil || err2 != nil {
				break
			}
			home := f[5]
			if home == "" {
				home = "/"
			}
			return guestUser{name: name, uid: uint32(uid), gid: uint32(gid), home: home}, nil
		}
	}
	if name == "root" {
		return guestUser{name: "root", home: "/root"}, nil
	}
	return guestUser{}, rpcErrorf(codeInvalidArgument, "no user %q in template %s", name, sb.templateID)
}

// resolve makes p absolute, relative to the user's home as envd does.
func (u guestUser) resolve(p string) string {
	switch {
	case p == "~":
		p = u.home
	case strings.HasPrefix(p, "~/"):
		p = path.Join(u.home, p[2:])
	case !path.IsAbs(p):
		p = path.Join(u.home, p)
	}
	return path.Clean(p)
}

// spec is the OCI process for args run as u in cwd (the home if
// empty) with the sandbox's environment and env.
func (sb *sandbox) spec(u guestUser, args []string, cwd string, env map[string]string) *specs.Process {
	name, value, _ := strings.Cut(defaultPath, "=")
	vars := map[string]string{name: value}
	for _, kv := range sb.imageEnv {
		if k, v, ok := strings.Cut(kv, "="); ok && k != "" {
			vars[k] = v
		}
	}
	vars["HOME"], vars["USER"], vars["LOGNAME"] = u.home, u.name, u.name
	for k, v := range sb.envVars {
		vars[k] = v
	}
	for k, v := range env {
		vars[k] = v
	}
	var list []string
	for k, v := range vars {
		list = append(list, k+"="+v)
	}
	sort.Strings(list)
	if cwd == "" {
		cwd = u.home
	}
	return &specs.Process{Args: args, Env: list, Cwd: u.resolve(cwd),
		User: specs.User{UID: u.uid, GID: u.gid}, Capabilities: capabilities(u.uid)}
}
