package integration

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/moat-sandbox/moat/internal/ocirun"
)

// TestUnusableKVMIsOneLineWithTheFallBackAndLeavesNothing: where /dev/kvm
// cannot run a VM, --platform=kvm fails in the sentry's boot; create and
// run then exit 1 with one line that suggests --platform=systrap, and leave
// no state, sentry or gofer behind (newMoatEnv's check). The device is
// hidden in a mount namespace of moat's own: /dev/null bound over it, or
// nothing where the host has none.
func TestUnusableKVMIsOneLineWithTheFallBackAndLeavesNothing(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: it hides /dev/kvm in a mount namespace")
	}
	unshare, err := exec.LookPath("unshare")
	if err != nil {
		t.Skipf("no unshare(1) to give moat a mount namespace: %v", err)
	}
	e := newEnv(t)
	e.config("true")
	kvm := (&ocirun.Runtime{Name: "moat", Path: e.moat.Path, Flags: []string{"--log", e.log, "--platform=kvm"}}).At(e.moat.Dir)
	const hide = `if [ -e /dev/kvm ]; then mount --bind /dev/null /dev/kvm || exit 99; fi; exec "$@"`
	for _, sub := range []string{"create", "run"} {
		moat := kvm.Command(sub, "--bundle", e.bundle, "nokvm")
		cmd := exec.Command(unshare, append([]string{"--mount", "--propagation", "private", "sh", "-c", hide, "sh", moat.Path}, moat.Args[1:]...)...)
		out := newOutput(t)
		x := ocirun.Run(context.Background(), cmd, out.Stdio(), ocirun.Limits{Timeout: ocirun.CommandTimeout})
		if x.StartErr != nil {
			t.Fatal(x.StartErr)
		}
		_, errOut, err := out.Read()
		must(t, err)
		line := strings.TrimSpace(errOut)
		if x.Code != 1 || strings.Contains(line, "\n") || !strings.Contains(line, "kvm: ") || !strings.Contains(line, "--platform=systrap") {
			t.Errorf("%s: exit %d, stderr %q; want exit 1 and one line about KVM suggesting --platform=systrap", sub, x.Code, errOut)
		}
		if _, err := e.moat.State("nokvm"); err == nil {
			t.Errorf("%s: the container exists after the sentry failed to boot", sub)
		}
	}
}
