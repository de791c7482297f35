package integration

import (
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

// Tools that sandbox themselves without privilege make a user namespace
// first: inside `moat sandbox` (no CAP_SYS_ADMIN) they get one of the
// sentry's, whose capabilities count inside it alone.

func TestSandboxUnshareUserMapsTheCallerToRoot(t *testing.T) {
	for name, ids := range localUsers(t) {
		t.Run(name, func(t *testing.T) {
			e := newLocalEnv(t, ids[0], ids[1])
			r := e.run("--", "sh", "-c", `unshare -U -r sh -c 'id -u; id -g; cat /proc/self/uid_map; cat /proc/self/setgroups'; id -u`)
			want := "0\n0\n"
			if r.code != 0 || !strings.HasPrefix(r.stdout, want) {
				t.Fatalf("unshare -U -r: status %d, stdout %q, stderr %q; want %q first", r.code, r.stdout, r.stderr, want)
			}
			lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
			if len(lines) != 5 || strings.Join(strings.Fields(lines[2]), " ") != "0 "+strconv.Itoa(ids[0])+" 1" ||
				lines[3] != "deny" || lines[4] != strconv.Itoa(ids[0]) {
				t.Errorf("stdout %q: want the map \"0 %d 1\", setgroups deny, then the caller's uid outside", r.stdout, ids[0])
			}
		})
	}
}

func TestSandboxRunsBubblewrapWithoutPrivilege(t *testing.T) {
	if _, err := exec.LookPath("bwrap"); err != nil {
		t.Skip("bwrap is not installed")
	}
	for name, ids := range localUsers(t) {
		t.Run(name, func(t *testing.T) {
			e := newLocalEnv(t, ids[0], ids[1])
			script := `bwrap --unshare-user --ro-bind / / --dev /dev --proc /proc true && echo ok
bwrap --unshare-user --ro-bind / / --dev /dev --proc /proc --unshare-pid --unshare-ipc --unshare-uts --hostname box sh -c 'echo $$ $(hostname); touch /usr/x 2>/dev/null || echo ro'
bwrap --unshare-user --uid 0 --ro-bind / / --tmpfs /tmp sh -c 'id -u; touch /tmp/a && echo tmp'
echo $(id -u)`
			r := e.run("--", "sh", "-c", script)
			want := "ok\n2 box\nro\n0\ntmp\n" + strconv.Itoa(ids[0]) + "\n"
			if r.code != 0 || r.stdout != want {
				t.Errorf("bwrap: status %d, stdout %q, stderr %q; want %q", r.code, r.stdout, r.stderr, want)
			}
		})
	}
}
