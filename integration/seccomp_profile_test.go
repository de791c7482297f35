package integration

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/moat-sandbox/moat/internal/ocirun"
)

// podmanProfile is Debian's containers-common default seccomp profile,
// which podman (and, in the same format, docker) sends as linux.seccomp.
const podmanProfile = "/usr/share/containers/seccomp.json"

// engineProfile is the engines' profile format: the OCI one plus which
// entries apply to which architectures and capabilities.
type engineProfile struct {
	DefaultAction   specs.LinuxSeccompAction `json:"defaultAction"`
	DefaultErrnoRet *uint                    `json:"defaultErrnoRet"`
	ArchMap         []struct {
		Architecture     specs.Arch   `json:"architecture"`
		SubArchitectures []specs.Arch `json:"subArchitectures"`
	} `json:"archMap"`
	Syscalls []struct {
		specs.LinuxSyscall
		Includes, Excludes struct {
			Arches []string `json:"arches"`
			Caps   []string `json:"caps"`
		}
	} `json:"syscalls"`
}

// ociSeccomp is the linux.seccomp an engine makes of p for an x86-64
// container holding caps: the entries for amd64 whose included
// capabilities it holds all of and whose excluded ones it holds none of.
func ociSeccomp(t *testing.T, path string, caps []string) *specs.LinuxSeccomp {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Skipf("%s: %v (containers-common is not installed)", path, err)
	}
	var p engineProfile
	must(t, json.Unmarshal(b, &p))
	s := &specs.LinuxSeccomp{DefaultAction: p.DefaultAction, DefaultErrnoRet: p.DefaultErrnoRet}
	for _, a := range p.ArchMap {
		if a.Architecture == specs.ArchX86_64 {
			s.Architectures = append([]specs.Arch{a.Architecture}, a.SubArchitectures...)
		}
	}
	holds := func(names []string) bool {
		for _, c := range names {
			if !slices.Contains(caps, c) {
				return false
			}
		}
		return true
	}
	holdsAny := func(names []string) bool {
		return slices.ContainsFunc(names, func(c string) bool { return slices.Contains(caps, c) })
	}
	for _, sc := range p.Syscalls {
		in, ex := sc.Includes, sc.Excludes
		if (len(in.Arches) > 0 && !slices.Contains(in.Arches, "amd64")) || !holds(in.Caps) ||
			slices.Contains(ex.Arches, "amd64") || holdsAny(ex.Caps) {
			continue
		}
		s.Syscalls = append(s.Syscalls, sc.LinuxSyscall)
	}
	return s
}

// seccompProbe calls one call the profile denies (vmsplice: EPERM), one
// it does not name (add_key: the default action, ENOSYS) and one it allows.
const seccompProbe = `#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

static void probe(const char *name, long r)
{
	printf("%s: %s\n", name, r == -1 ? strerrorname_np(errno) : "ok");
}

int main(void)
{
	probe("vmsplice", syscall(SYS_vmsplice, -1, 0, 0, 0));
	probe("add_key", syscall(SYS_add_key, "user", "k", "v", 1, -4));
	probe("getppid", syscall(SYS_getppid));
	return 0;
}
`

// TestPodmanDefaultSeccompProfileDeniesAsUnderRunc: podman's default
// profile, given as linux.seccomp, gives a denied call EPERM and an
// unnamed one ENOSYS inside moat as under runc, while an allowed call
// works; without the profile the same calls get their own errors.
func TestPodmanDefaultSeccompProfileDeniesAsUnderRunc(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("not root: runc and moat need root to run a sandbox")
	}
	runc, err := ocirun.LookPath("runc")
	if err != nil {
		t.Skipf("runc: %v", err)
	}
	e := newEnv(t)
	must(t, os.MkdirAll(filepath.Join(e.bundle, "rootfs/proc"), 0o755))
	e.buildProgram("probe", seccompProbe)
	spec := ocirun.Spec([]string{"/bin/probe"}, []string{"PATH=/bin"}, "moat-seccomp")
	spec.Mounts = []specs.Mount{ocirun.Proc()}
	e.writeSpec(*spec)
	unfiltered, errOut, code := e.moatCmd("run", "--bundle", e.bundle, "plain")
	if code != 0 {
		t.Fatalf("moat without a profile: exit %d: %s", code, errOut)
	}

	spec.Linux.Seccomp = ociSeccomp(t, podmanProfile, nil)
	e.writeSpec(*spec)
	const want = "vmsplice: EPERM\nadd_key: ENOSYS\ngetppid: ok\n"
	out, errOut, code := e.moatCmd("run", "--bundle", e.bundle, "profiled")
	if code != 0 || out != want {
		t.Errorf("moat with podman's profile: exit %d, stdout:\n%s\nstderr: %s\nwant:\n%s", code, out, errOut, want)
	}
	if unfiltered == want {
		t.Errorf("moat gives the same answers without the profile:\n%s", unfiltered)
	}
	cmd := exec.Command(runc, "--root", t.TempDir(), "run", "--bundle", e.bundle, "moat-seccomp-runc")
	b, err := cmd.Output()
	if err != nil || string(b) != want {
		t.Errorf("runc with podman's profile: %v, stdout:\n%s\nwant:\n%s", err, b, want)
	}
}
