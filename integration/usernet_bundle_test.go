package integration

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/internal/ocirun"
	"github.com/moat-sandbox/moat/internal/state"
)

// userNetBundle writes a config that sleeps on the user-space network
// with an allowlist naming an address of the test network's (the guest
// dials nothing: only the processes' lives are tested).
func userNetBundle(e *env) {
	e.t.Helper()
	e.config("sleep", "30")
	spec, err := ocirun.ReadSpec(e.bundle)
	must(e.t, err)
	spec.Annotations = map[string]string{"dev.moat.net": "user", "dev.moat.net-allow": netBehindGateway + ":80"}
	e.writeSpec(*spec)
}

// usernetOf is the moat usernet the container's record names, which must
// run now.
func usernetOf(e *env, id string) state.Process {
	e.t.Helper()
	rec := readRecord(e.t, filepath.Join(e.moat.Dir, id))
	if !rec.Usernet.Alive() {
		e.t.Fatalf("no moat usernet runs for %s: %+v", id, rec.Usernet)
	}
	if args := cmdline(rec.Usernet.PID); len(args) < 2 || args[1] != "usernet" {
		e.t.Fatalf("the record's usernet, pid %d, is %v", rec.Usernet.PID, args)
	}
	e.pids = append(e.pids, rec.Sentry.PID)
	return rec.Usernet
}

// waitGone fails the test unless p has exited within 10 s.
func waitGone(t *testing.T, p state.Process, after string) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); p.Alive(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("moat usernet (pid %d) still runs 10 s after %s", p.PID, after)
		}
	}
}

// TestBundleUserNetworkLivesAsLongAsItsSentry: a bundle with dev.moat.net
// user gets a moat usernet from create, which ends when the sentry ends
// however it ends (moat kill, SIGKILL to the sentry, with no CLI left to
// tell it) and which delete kills with the rest; nothing is left.
func TestBundleUserNetworkLivesAsLongAsItsSentry(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: the sandbox's cgroup")
	}
	for name, end := range map[string]func(e *env, rec state.Container){
		"moat kill": func(e *env, _ state.Container) {
			if _, errOut, code := e.moatCmd("kill", "c", "KILL"); code != 0 {
				e.t.Fatalf("kill: %d %s", code, errOut)
			}
		},
		"SIGKILL to the sentry": func(e *env, rec state.Container) {
			must(e.t, unix.Kill(rec.Sentry.PID, unix.SIGKILL))
		},
	} {
		t.Run(name, func(t *testing.T) {
			e := newEnv(t)
			userNetBundle(e)
			if _, errOut, code := e.moatCmd("run", "--bundle", e.bundle, "--detach", "c"); code != 0 {
				t.Fatalf("run --detach: %d %s", code, errOut)
			}
			un := usernetOf(e, "c")
			end(e, readRecord(t, filepath.Join(e.moat.Dir, "c")))
			waitGone(t, un, name+" ended the sentry")
			if _, errOut, code := e.moatCmd("delete", "c"); code != 0 {
				t.Errorf("delete: %d %s", code, errOut)
			}
		})
	}
	t.Run("delete --force", func(t *testing.T) {
		e := newEnv(t)
		userNetBundle(e)
		if _, errOut, code := e.moatCmd("create", "--bundle", e.bundle, "c"); code != 0 {
			t.Fatalf("create: %d %s", code, errOut)
		}
		un := usernetOf(e, "c")
		if _, errOut, code := e.moatCmd("delete", "--force", "c"); code != 0 {
			t.Fatalf("delete --force: %d %s", code, errOut)
		}
		if un.Alive() {
			t.Errorf("moat usernet (pid %d) still runs once delete returned", un.PID)
		}
	})
}

// TestBundleUserNetworkBadRequestIsOneLine: an unknown network name, or the
// user-space network beside a namespace path, fails create with one line
// naming the annotation, and leaves nothing behind.
func TestBundleUserNetworkBadRequestIsOneLine(t *testing.T) {
	for _, c := range []struct {
		annotation string
		netns      string
		want       string
	}{
		{"slirp", "", `dev.moat.net: "slirp": the one network it names is "user"`},
		{"user", "/proc/self/ns/net", "dev.moat.net: the config also joins the network namespace /proc/self/ns/net"},
	} {
		e := newEnv(t)
		e.config("true")
		spec, err := ocirun.ReadSpec(e.bundle)
		must(t, err)
		spec.Annotations = map[string]string{"dev.moat.net": c.annotation}
		if c.netns != "" {
			spec.Linux = &specs.Linux{Namespaces: []specs.LinuxNamespace{{Type: specs.NetworkNamespace, Path: c.netns}}}
		}
		e.writeSpec(*spec)
		_, errOut, code := e.moatCmd("create", "--bundle", e.bundle, "bad")
		if code != 1 || !strings.Contains(errOut, c.want) || strings.Count(strings.TrimSpace(errOut), "\n") != 0 {
			t.Errorf("%s: exit %d, stderr %q; want exit 1 and one line with %q", c.annotation, code, errOut, c.want)
		}
	}
}
