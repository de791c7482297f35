package main

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// testHost is a caller in a project directory under a home that holds a
// credential store and a credential file.
func testHost(t *testing.T) localHost {
	t.Helper()
	base := t.TempDir()
	home := filepath.Join(base, "home")
	for _, d := range []string{"proj", ".ssh", "cache"} {
		if err := os.MkdirAll(filepath.Join(home, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(home, ".netrc"), []byte("machine x password y\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return localHost{cwd: filepath.Join(home, "proj"), home: home, uid: 1000, gid: 1000,
		environ:  []string{"PATH=/usr/bin:/bin", "HOME=" + home, "LANG=C.UTF-8", "GITHUB_TOKEN=t0k", "AWS_SECRET_ACCESS_KEY=s3c", "EDITOR=vi"},
		memTotal: 8 << 30, private: filepath.Join(base, "private"), emptyFile: filepath.Join(base, "private", "empty")}
}

func mountAtDest(spec *specs.Spec, dest string) (specs.Mount, bool) {
	for _, m := range spec.Mounts {
		if m.Destination == dest {
			return m, true
		}
	}
	return specs.Mount{}, false
}

func TestLocalSpecSharesTheCurrentDirectoryWritableAndHidesTheRestOfHome(t *testing.T) {
	h := testHost(t)
	spec, _, err := localSpec(localPolicy{}, h, []string{"true"}, false)
	if err != nil {
		t.Fatal(err)
	}
	if spec.Root.Path != "/" || spec.Root.Readonly {
		t.Errorf("root = %+v, want the host's / under the overlay (readonly false)", spec.Root)
	}
	cwd, ok := mountAtDest(spec, h.cwd)
	if !ok || cwd.Type != "bind" || cwd.Source != h.cwd || !slices.Contains(cwd.Options, "rw") {
		t.Errorf("current directory mount = %+v, %v; want a writable bind of itself", cwd, ok)
	}
	home, ok := mountAtDest(spec, h.home)
	if !ok || home.Type != "tmpfs" {
		t.Errorf("home mount = %+v, %v; want an empty tmpfs", home, ok)
	}
	if i, j := slices.IndexFunc(spec.Mounts, func(m specs.Mount) bool { return m.Destination == h.home }),
		slices.IndexFunc(spec.Mounts, func(m specs.Mount) bool { return m.Destination == h.cwd }); i > j {
		t.Errorf("home is mounted after the current directory inside it: %d > %d", i, j)
	}
	// Inside the hidden home the stores are hidden already: no mount of
	// their own.
	if m, ok := mountAtDest(spec, filepath.Join(h.home, ".ssh")); ok {
		t.Errorf("~/.ssh has a mount of its own inside the hidden home: %+v", m)
	}
	if spec.Process.Cwd != h.cwd || spec.Process.User.UID != 1000 || spec.Process.User.GID != 1000 {
		t.Errorf("process cwd %q user %+v, want %q as 1000:1000", spec.Process.Cwd, spec.Process.User, h.cwd)
	}
	if spec.Annotations[netAllowAnnotation] != "" || spec.Linux.Namespaces != nil {
		t.Errorf("network: annotations %v namespaces %v, want loopback alone", spec.Annotations, spec.Linux.Namespaces)
	}
}

func TestLocalSpecHidesCredentialStoresEvenWhenHomeIsShown(t *testing.T) {
	h := testHost(t)
	spec, _, err := localSpec(localPolicy{Home: true}, h, []string{"true"}, false)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := mountAtDest(spec, h.home); ok {
		t.Errorf("home hidden despite --home")
	}
	if m, ok := mountAtDest(spec, filepath.Join(h.home, ".ssh")); !ok || m.Type != "tmpfs" {
		t.Errorf("~/.ssh mount = %+v, %v; want an empty tmpfs", m, ok)
	}
	if m, ok := mountAtDest(spec, filepath.Join(h.home, ".netrc")); !ok || m.Source != h.emptyFile || !slices.Contains(m.Options, "ro") {
		t.Errorf("~/.netrc mount = %+v, %v; want the empty file over it, read-only", m, ok)
	}
	if _, ok := mountAtDest(spec, filepath.Join(h.home, ".aws")); ok {
		t.Errorf("~/.aws, which does not exist, has a mount (its mount point would be made on the host)")
	}
}

func TestLocalSpecHidesCredentialStoresInsideASharedHome(t *testing.T) {
	h := testHost(t)
	h.cwd = h.home
	spec, _, err := localSpec(localPolicy{}, h, []string{"true"}, false)
	if err != nil {
		t.Fatal(err)
	}
	if m, ok := mountAtDest(spec, h.home); !ok || m.Type != "bind" {
		t.Errorf("home, the current directory, = %+v, %v; want it shared", m, ok)
	}
	i := slices.IndexFunc(spec.Mounts, func(m specs.Mount) bool { return m.Destination == h.home })
	j := slices.IndexFunc(spec.Mounts, func(m specs.Mount) bool { return m.Destination == filepath.Join(h.home, ".ssh") })
	if j < 0 || j < i {
		t.Errorf("~/.ssh mount at %d, home's at %d: want ~/.ssh hidden over the shared home", j, i)
	}
}

func TestLocalSpecErrorsNameTheirFlag(t *testing.T) {
	h := testHost(t)
	for _, c := range []struct {
		p    localPolicy
		flag string
	}{
		{localPolicy{RW: []string{"does-not-exist"}}, "--rw"},
		{localPolicy{RO: []string{"/does/not/exist"}}, "--ro"},
		{localPolicy{RW: []string{"/"}}, "--rw"},
		{localPolicy{Net: true, NetAllow: []string{"pypi.org"}}, "--net"},
		{localPolicy{RW: []string{"~/cache"}, RO: []string{"~/cache"}}, "--ro"},
		{localPolicy{RW: []string{"~/.ssh"}}, "--rw"},
		{localPolicy{Memory: "lots"}, "--memory"},
		{localPolicy{CPUs: -1}, "--cpus"},
		{localPolicy{PIDs: -5}, "--pids"},
		{localPolicy{Timeout: "soon"}, "--timeout"},
		{localPolicy{Env: []string{"GITHUB_TOKEN"}}, "--env"},
	} {
		_, _, err := localSpec(c.p, h, []string{"true"}, false)
		var fe *flagError
		if !errors.As(err, &fe) || fe.flag != c.flag || strings.Contains(err.Error(), "\n") {
			t.Errorf("policy %+v: error %v, want one line naming %s", c.p, err, c.flag)
		}
	}
}

func TestLocalSpecRefusesToShareTheWholeRootAsTheCurrentDirectory(t *testing.T) {
	h := testHost(t)
	h.cwd = "/"
	if _, _, err := localSpec(localPolicy{}, h, []string{"true"}, false); err == nil {
		t.Error("localSpec in / succeeded, want an error: / would be shared writable")
	}
}

func TestLocalEnvPassesNoSecretUnlessItsValueIsGiven(t *testing.T) {
	h := testHost(t)
	env, err := localEnv([]string{"EDITOR", "UNSET_VAR", "API_KEY=given", "LANG=fr_FR.UTF-8"}, h)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"PATH=/usr/bin:/bin", "HOME=" + h.home, "LANG=fr_FR.UTF-8", "PWD=" + h.cwd, "EDITOR=vi", "API_KEY=given"}
	if !slices.Equal(env, want) {
		t.Errorf("env = %q, want %q", env, want)
	}
	for _, kv := range env {
		if strings.HasPrefix(kv, "GITHUB_TOKEN=") || strings.HasPrefix(kv, "AWS_SECRET_ACCESS_KEY=") {
			t.Errorf("secret passed by default: %s", kv)
		}
	}
}

func TestLocalResourcesDefaultToHalfTheMemoryAndABoundOnProcesses(t *testing.T) {
	h := testHost(t)
	h.uid, h.gid = 0, 0
	r, err := localResources(localPolicy{}, h)
	if err != nil {
		t.Fatal(err)
	}
	if r.Memory == nil || *r.Memory.Limit != 4<<30 || r.Pids == nil || *r.Pids.Limit != defaultPIDs || r.CPU != nil {
		t.Errorf("default resources %+v, want memory 4 GiB, pids %d, no CPU limit", r, defaultPIDs)
	}
	h.uid, h.gid = 1000, 1000
	if r, err := localResources(localPolicy{}, h); err != nil || r.Memory != nil || r.Pids != nil || r.CPU != nil {
		t.Errorf("rootless default resources %+v, %v: want none (no cgroup would hold them)", r, err)
	}
	r, err = localResources(localPolicy{Memory: "512m", CPUs: 1.5, PIDs: 64}, h)
	if err != nil {
		t.Fatal(err)
	}
	if *r.Memory.Limit != 512<<20 || *r.Pids.Limit != 64 || *r.CPU.Quota != 150000 || *r.CPU.Period != 100000 {
		t.Errorf("resources %+v: want 512 MiB, 64 pids, a quota of 1.5 periods", r)
	}
}

func TestSettingsFileErrorsNameTheirLine(t *testing.T) {
	for _, c := range []struct {
		text string
		line int
	}{
		{"rw = [\"a\"]\nnet = maybe\n", 2},
		{"# policy\nhome = true\nrw = 5\n", 3},
		{"ro = []\n\nnet-alow = [\"x\"]\n", 3},
		{"timeout = \"soon\"\n", 1},
	} {
		_, err := parseSettings("sandbox.toml", c.text)
		var se *settingsError
		if !errors.As(err, &se) || se.line != c.line || strings.Contains(err.Error(), "\n") {
			t.Errorf("settings %q: error %v, want one line naming line %d", c.text, err, c.line)
		}
	}
}

func TestSettingsAreDefaultsThatFlagsExtendOrReplace(t *testing.T) {
	settings, err := parseSettings("sandbox.toml", "rw = [\"~/.cache\"]\nenv = [\"EDITOR\"]\nmemory = \"2g\"\nnet_allow = [\"pypi.org\"]\ntimeout = \"10m\"\n")
	if err != nil {
		t.Fatal(err)
	}
	flags := localPolicy{RW: []string{"/data"}, Memory: "1g", NetAllow: []string{"github.com"}}
	set := map[string]bool{"rw": true, "memory": true}
	p := mergePolicy(settings, flags, func(name string) bool { return set[name] })
	if !slices.Equal(p.RW, []string{"~/.cache", "/data"}) || p.Memory != "1g" || !slices.Equal(p.NetAllow, []string{"pypi.org"}) ||
		p.Timeout != "10m" || !slices.Equal(p.Env, []string{"EDITOR"}) {
		t.Errorf("merged policy %+v", p)
	}
}

func TestAMissingDefaultSettingsFileIsNoSettings(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "sandbox.toml")
	if _, err := loadSettings(missing, false); err != nil {
		t.Errorf("missing default settings: %v, want none", err)
	}
	if _, err := loadSettings(missing, true); err == nil {
		t.Errorf("missing --settings file: no error")
	}
}
