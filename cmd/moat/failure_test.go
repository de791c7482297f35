package main

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// withLinux is the sleeping bundle's config with linux set to the JSON
// object linux.
func withLinux(linux string) string {
	return strings.Replace(bundleConfig("sleep"), `"annotations"`, `"linux": `+linux+`, "annotations"`, 1)
}

func TestBadBundleCreatesNothing(t *testing.T) {
	missingRootfs := writeBundleConfig(t, strings.Replace(bundleConfig("sleep"), `"rootfs"`, `"image"`, 1))
	cases := map[string]struct {
		bundle string
		want   string
	}{
		"bundle dir missing":    {filepath.Join(t.TempDir(), "nope"), "directory not found"},
		"config missing":        {t.TempDir(), "config.json not found"},
		"invalid JSON":          {writeBundleConfig(t, "{\n  \"ociVersion\": \"1.2.0\",\n  oops\n}"), "invalid JSON at line 3, column 3"},
		"wrong type":            {writeBundleConfig(t, `{"ociVersion": "1.2.0", "process": {"args": "sh"}}`), "process.args: got a JSON string"},
		"no ociVersion":         {writeBundleConfig(t, `{"process": {"args": ["sh"], "cwd": "/"}, "root": {"path": "rootfs"}}`), "ociVersion: missing"},
		"ociVersion 2":          {writeBundleConfig(t, strings.Replace(bundleConfig("sleep"), "1.2.0", "2.0.0", 1)), `ociVersion: unsupported version "2.0.0"`},
		"no process":            {writeBundleConfig(t, `{"ociVersion": "1.2.0", "root": {"path": "rootfs"}}`), "process: missing"},
		"empty args":            {writeBundle(t), "process.args: must name the program"},
		"relative cwd":          {writeBundleConfig(t, strings.Replace(bundleConfig("sleep"), `"cwd": "/"`, `"cwd": "tmp"`, 1)), `process.cwd: "tmp" is not an absolute path`},
		"no root":               {writeBundleConfig(t, `{"ociVersion": "1.2.0", "process": {"args": ["sh"], "cwd": "/"}}`), "root: missing"},
		"rootfs missing":        {missingRootfs, `root.path: "image": directory ` + filepath.Join(missingRootfs, "image") + " not found"},
		"program not found":     {writeBundle(t, "not-found"), `process.args[0] "not-found": program not found in the rootfs`},
		"sentry quits":          {writeBundle(t, "quit"), "the sentry quit before the sandbox was ready (exit status 3)"},
		"negative memory limit": {writeBundleConfig(t, withLinux(`{"resources": {"memory": {"limit": -5}}}`)), "linux.resources.memory.limit: -5: must be positive"},
		"negative pids limit":   {writeBundleConfig(t, withLinux(`{"resources": {"pids": {"limit": -2}}}`)), "linux.resources.pids.limit: -2: must be positive"},
		"cpuset off the host":   {writeBundleConfig(t, withLinux(`{"resources": {"cpu": {"cpus": "9999"}}}`)), `linux.resources.cpu.cpus: "9999": 9999 is not among the host's`},
		"cgroup path syntax":    {writeBundleConfig(t, withLinux(`{"cgroupsPath": "machine.slice:libpod:c1"}`)), `linux.cgroupsPath: "machine.slice:libpod:c1": a systemd slice:prefix:name needs --systemd-cgroup`},
		"terminal, no socket":   {writeBundleConfig(t, strings.Replace(bundleConfig("sleep"), `"cwd"`, `"terminal": true, "cwd"`, 1)), "cannot allocate tty if moat will detach without setting console socket"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			e := newEnv(t)
			pidFile := filepath.Join(t.TempDir(), "pid")
			r := e.fails(c.want, "create", "--bundle", c.bundle, "--pid-file", pidFile, "c1")
			if !strings.HasPrefix(r.stderr, "moat: create: ") {
				t.Errorf("stderr %q does not say which command failed", r.stderr)
			}
			e.expectNothingLeft()
			if _, err := os.Stat(pidFile); !os.IsNotExist(err) {
				t.Errorf("a failed create wrote the pid file: %v", err)
			}
			e.fails(c.want, "run", "--bundle", c.bundle, "-d", "c1")
			e.expectNothingLeft()
			expectNoCgroup(t, "c1")
		})
	}
}

// TestBadSystemdCgroupPathCreatesNothing: with --systemd-cgroup the path
// is slice:prefix:name, and anything else is refused by name.
func TestBadSystemdCgroupPathCreatesNothing(t *testing.T) {
	for path, want := range map[string]string{
		"/plain/path":      `linux.cgroupsPath: "/plain/path": with --systemd-cgroup, want slice:prefix:name`,
		"machine:libpod:x": `linux.cgroupsPath: "machine:libpod:x": "machine" is not a systemd slice name`,
	} {
		e := newEnv(t)
		bundle := writeBundleConfig(t, withLinux(`{"cgroupsPath": "`+path+`"}`))
		e.fails(want, "--systemd-cgroup", "create", "--bundle", bundle, "c1")
		e.expectNothingLeft()
		expectNoCgroup(t, "c1")
	}
}

// expectNoCgroup checks that no cgroup named id is left in any hierarchy
// (a container's default cgroup is under the caller's, any depth down).
func expectNoCgroup(t *testing.T, id string) {
	t.Helper()
	filepath.WalkDir("/sys/fs/cgroup", func(path string, d os.DirEntry, err error) error {
		if err == nil && d.IsDir() && d.Name() == id {
			t.Errorf("cgroup left behind: %s", path)
		}
		return nil
	})
}

// TestPlatformThatCannotStartCreatesNothing: --platform reaches the sentry
// (systrap when not given), and a platform that cannot start there fails
// create and run with the sentry's one line, leaving nothing behind.
// The CLI opens /dev/kvm for the sentry: where it cannot (no device, not
// root), it fails so itself, with the same fall-back.
func TestPlatformThatCannotStartCreatesNothing(t *testing.T) {
	bundle := writeBundle(t, "no-platform")
	kvmWant := `platform "kvm" cannot run here`
	if f, err := os.OpenFile("/dev/kvm", os.O_RDWR, 0); err != nil {
		kvmWant = "kvm: open /dev/kvm: " + errors.Unwrap(err).Error() + "; use --platform=systrap, which needs no KVM"
	} else {
		f.Close()
	}
	for _, c := range []struct {
		flags []string
		want  string
	}{
		{nil, `platform "systrap" cannot run here`},
		{[]string{"--platform=systrap"}, `platform "systrap" cannot run here`},
		{[]string{"--platform", "kvm"}, kvmWant},
	} {
		e := newEnv(t)
		for _, sub := range []string{"create", "run"} {
			r := e.fails(c.want, append(c.flags, sub, "--bundle", bundle, "c1")...)
			if !strings.HasPrefix(r.stderr, "moat: "+sub+": ") {
				t.Errorf("%v %s: stderr %q does not say which command failed", c.flags, sub, r.stderr)
			}
			e.expectNothingLeft()
		}
	}
}

func TestConsoleSocketWithoutTerminal(t *testing.T) {
	e := newEnv(t)
	e.fails("cannot use console socket if moat will not detach or allocate tty",
		"create", "--console-socket", filepath.Join(t.TempDir(), "sock"), "-b", writeBundle(t, "sleep"), "c1")
	e.expectNothingLeft()
}

func TestUnreachableConsoleSocketCreatesNothing(t *testing.T) {
	e := newEnv(t)
	bundle := writeBundleConfig(t, strings.Replace(bundleConfig("sleep"), `"cwd"`, `"terminal": true, "cwd"`, 1))
	e.fails("console socket", "create", "--console-socket", filepath.Join(t.TempDir(), "nobody"), "-b", bundle, "c1")
	e.expectNothingLeft()
}
