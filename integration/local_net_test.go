package integration

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// localNet is the test network a `moat sandbox` run's host side lives in:
// moat runs in the container namespace of newTestNetwork, whose resolver
// (the server namespace's serveDNS) answers allowed.test and denied.test
// with two addresses of the server namespace, where one HTTP server
// listens on all of them. Nothing leaves the two namespaces.
type localNet struct {
	port   int
	asked  chan string // names the resolver was asked for
	served chan string // the local address of each request the server answered
}

func newLocalNet(t *testing.T, e *localEnv, tag string) *localNet {
	t.Helper()
	if _, err := exec.LookPath("nsenter"); err != nil {
		t.Skip("nsenter (util-linux) is missing: no way to run moat in the test network")
	}
	if _, err := os.Stat("/usr/bin/wget"); err != nil {
		t.Skip("no /usr/bin/wget on this host to fetch with in the sandbox")
	}
	n := newTestNetwork(t, tag)
	if out, err := exec.Command("ip", "-n", n.server, "addr", "add", "10.214.0.2/32", "dev", "lo").CombinedOutput(); err != nil {
		t.Fatalf("ip: %v: %s", err, out)
	}
	ln := &localNet{asked: make(chan string, 64), served: make(chan string, 64)}
	l := listenIn(t, n.server)
	ln.port = l.Addr().(*net.TCPAddr).Port
	go http.Serve(l, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		local := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
		host, _, _ := net.SplitHostPort(local.String())
		select {
		case ln.served <- host:
		default:
		}
		fmt.Fprintf(w, "served by %s\n", host)
	}))
	go serveDNS(udpIn(t, n.server, netServerAddr+":53"), ln.asked)
	e.netns = n.container
	e.resolvConf = filepath.Join(filepath.Dir(e.dir), "resolv.conf")
	must(t, os.WriteFile(e.resolvConf, []byte("nameserver "+netServerAddr+"\n"), 0o644))
	return ln
}

// fetch is a script line that fetches http://host:port/ once and says
// what with its status.
func (ln *localNet) fetch(what, host string) string {
	return fmt.Sprintf("wget -q -O - -T 20 -t 1 http://%s:%d/; echo %s $?; ", host, ln.port, what)
}

// drain returns what ch holds now.
func drain(ch chan string) []string {
	var out []string
	for {
		select {
		case s := <-ch:
			out = append(out, s)
		default:
			return out
		}
	}
}

// failed says whether script output line "what N" has N != 0.
func failed(stdout, what string) bool {
	for _, line := range strings.Split(stdout, "\n") {
		if rest, ok := strings.CutPrefix(line, what+" "); ok {
			return rest != "0"
		}
	}
	return false
}

func TestSandboxNetAllowReachesTheAllowedNameAndNothingElse(t *testing.T) {
	for name, ids := range localUsers(t) {
		t.Run(name, func(t *testing.T) {
			e := newLocalEnv(t, ids[0], ids[1])
			ln := newLocalNet(t, e, "la"+name[:1])
			r := e.run("--net-allow", "allowed.test", "--", "sh", "-c",
				ln.fetch("allowed", "allowed.test")+ln.fetch("denied", "denied.test")+ln.fetch("by-address", "10.214.0.2"))
			if !strings.Contains(r.stdout, "served by 10.214.0.1\nallowed 0\n") {
				t.Errorf("allowed.test was not reached: stdout %q, stderr %q", r.stdout, r.stderr)
			}
			for _, what := range []string{"denied", "by-address"} {
				if !failed(r.stdout, what) {
					t.Errorf("%s: reached, want refused: stdout %q", what, r.stdout)
				}
			}
			if r.code != 0 {
				t.Errorf("status %d, want 0 (the script's last echo); stderr %q", r.code, r.stderr)
			}
			for _, a := range drain(ln.served) {
				if a != "10.214.0.1" {
					t.Errorf("the server answered a request to %s: only allowed.test's address may be reached", a)
				}
			}
			for _, q := range drain(ln.asked) {
				if !strings.HasPrefix(q, "allowed.test") {
					t.Errorf("the resolver was asked for %q: a name not allowed left the sandbox", q)
				}
			}
		})
	}
}

func TestSandboxWithoutNetFlagsReachesNothingButLoopback(t *testing.T) {
	for name, ids := range localUsers(t) {
		t.Run(name, func(t *testing.T) {
			e := newLocalEnv(t, ids[0], ids[1])
			ln := newLocalNet(t, e, "ln"+name[:1])
			r := e.run("--", "sh", "-c", "cat /proc/net/dev | tail -n +3 | cut -d: -f1 | tr -d ' '; "+
				ln.fetch("by-name", "allowed.test")+ln.fetch("by-address", netBehindGateway))
			if !strings.HasPrefix(r.stdout, "lo\n") || strings.Contains(r.stdout, "eth0") {
				t.Errorf("interfaces: stdout %q, want lo alone", r.stdout)
			}
			for _, what := range []string{"by-name", "by-address"} {
				if !failed(r.stdout, what) {
					t.Errorf("%s: reached without --net or --net-allow: stdout %q", what, r.stdout)
				}
			}
			if got := drain(ln.served); len(got) > 0 {
				t.Errorf("the server answered requests to %v", got)
			}
			if got := drain(ln.asked); len(got) > 0 {
				t.Errorf("the resolver was asked for %v", got)
			}
		})
	}
}

func TestSandboxNetReachesEveryName(t *testing.T) {
	for name, ids := range localUsers(t) {
		t.Run(name, func(t *testing.T) {
			e := newLocalEnv(t, ids[0], ids[1])
			ln := newLocalNet(t, e, "lf"+name[:1])
			r := e.run("--net", "--", "sh", "-c", ln.fetch("allowed", "allowed.test")+ln.fetch("denied", "denied.test"))
			want := "served by 10.214.0.1\nallowed 0\nserved by 10.214.0.2\ndenied 0\n"
			if r.code != 0 || r.stdout != want {
				t.Errorf("status %d, stdout %q (stderr %q); want 0 and %q", r.code, r.stdout, r.stderr, want)
			}
			if !strings.Contains(r.stderr, "--net: the command may reach every address") {
				t.Errorf("stderr %q: --net is not said loudly", r.stderr)
			}
		})
	}
}

// TestSandboxNetworkHostSideRunsConfined: the process that reads the
// sandbox's frames on the host (moat usernet) runs as the sandbox's
// user (nobody for root's runs, the caller rootless: 65534 both here),
// with no capability, no_new_privs, and a root with nothing in it.
func TestSandboxNetworkHostSideRunsConfined(t *testing.T) {
	for name, ids := range localUsers(t) {
		t.Run(name, func(t *testing.T) {
			e := newLocalEnv(t, ids[0], ids[1])
			newLocalNet(t, e, "lc"+name[:1])
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			cmd := e.command(ctx, "--net", "--", "sh", "-c", "echo started; read x")
			stdin, err := cmd.StdinPipe()
			must(t, err)
			stdout, err := cmd.StdoutPipe()
			must(t, err)
			must(t, cmd.Start())
			defer cmd.Wait()
			defer stdin.Close()
			if line, err := bufio.NewReader(stdout).ReadString('\n'); err != nil || line != "started\n" {
				t.Fatalf("first output %q, %v", line, err)
			}
			// moat is the command's process (nsenter, unshare, sh and
			// setpriv exec it), and moat usernet its child.
			var found []int
			for _, p := range childPids(cmd.Process.Pid) {
				if args := cmdline(p); len(args) > 1 && args[0] == "moat" && args[1] == "usernet" {
					found = append(found, p)
				}
			}
			if len(found) != 1 {
				t.Fatalf("moat usernet processes under the run: %v, want one", found)
			}
			st := procStatus(t, found[0])
			want := map[string]string{"Uid": "65534\t65534\t65534\t65534", "Gid": "65534\t65534\t65534\t65534",
				"CapEff": "0000000000000000", "CapPrm": "0000000000000000", "CapBnd": "0000000000000000", "NoNewPrivs": "1",
				"Seccomp": "2"}
			for k, v := range want {
				if st[k] != v {
					t.Errorf("moat usernet's %s is %q, want %q", k, st[k], v)
				}
			}
			if ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/root", found[0])); err != nil || len(ents) != 0 {
				t.Errorf("moat usernet's root holds %d entries (%v), want none", len(ents), err)
			}
		})
	}
}
