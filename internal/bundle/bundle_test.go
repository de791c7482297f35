package bundle

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// validConfig is the smallest config.json that Load accepts.
const validConfig = `{
	"ociVersion": "1.0.2-dev",
	"process": {"args": ["sh"], "cwd": "/"},
	"root": {"path": "rootfs"}
}`

// writeBundle makes a bundle directory holding config and, unless config
// says otherwise, an empty rootfs directory.
func writeBundle(t *testing.T, config string) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "rootfs"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, ConfigName), []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// expectError loads dir and checks that the one error names field and
// mentions every piece of want.
func expectError(t *testing.T, dir, field string, want ...string) {
	t.Helper()
	b, err := Load(dir)
	if err == nil {
		t.Fatalf("Load(%s) = %+v, want an error", dir, b)
	}
	var bundleErr *Error
	if !errors.As(err, &bundleErr) {
		t.Fatalf("Load(%s) error %T %q is not a *bundle.Error", dir, err, err)
	}
	if bundleErr.Field != field {
		t.Errorf("error %q: Field = %q, want %q", err, bundleErr.Field, field)
	}
	msg := err.Error()
	if strings.Contains(msg, "\n") {
		t.Errorf("error %q spans more than one line", msg)
	}
	for _, w := range append(want, dir) {
		if !strings.Contains(msg, w) {
			t.Errorf("error %q does not mention %q", msg, w)
		}
	}
}

func TestLoadValid(t *testing.T) {
	dir := writeBundle(t, validConfig)
	b, err := Load(dir)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if b.Dir != dir || b.Rootfs != filepath.Join(dir, "rootfs") || b.Spec.Process.Args[0] != "sh" {
		t.Errorf("Load = %+v", b)
	}
}

func TestLoadRelativeBundlePathBecomesAbsolute(t *testing.T) {
	dir := writeBundle(t, validConfig)
	t.Chdir(dir)
	b, err := Load(".")
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if b.Dir != dir {
		t.Errorf("Dir = %q, want %q", b.Dir, dir)
	}
}

func TestLoadAcceptsSupportedVersions(t *testing.T) {
	for _, v := range []string{"1.0.0", "1.0.2-dev", "1.1.0", "1.2.1", "1.3.0", "1.3.0-rc.1"} {
		config := strings.Replace(validConfig, "1.0.2-dev", v, 1)
		if _, err := Load(writeBundle(t, config)); err != nil {
			t.Errorf("ociVersion %q: %v", v, err)
		}
	}
}

func TestLoadAbsoluteRootPath(t *testing.T) {
	rootfs := t.TempDir()
	dir := writeBundle(t, strings.Replace(validConfig, `"rootfs"`, `"`+rootfs+`"`, 1))
	b, err := Load(dir)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if b.Rootfs != rootfs {
		t.Errorf("Rootfs = %q, want %q", b.Rootfs, rootfs)
	}
}

func TestBundleDirMissing(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "nope")
	expectError(t, dir, "", "directory not found")
}

func TestBundleDirIsAFile(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(dir, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	expectError(t, dir, "", "not a directory")
}

func TestConfigMissing(t *testing.T) {
	expectError(t, t.TempDir(), "", "config.json not found")
}

func TestConfigUnreadable(t *testing.T) {
	// A directory in place of the file cannot be read even by root, so the
	// test holds whoever runs it.
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, ConfigName), 0o755); err != nil {
		t.Fatal(err)
	}
	expectError(t, dir, "", "config.json", "cannot read")
}

func TestConfigInvalidJSON(t *testing.T) {
	dir := writeBundle(t, "{\n\t\"ociVersion\": \"1.0.0\",\n\t\"process\": {,\n}")
	expectError(t, dir, "", "config.json", "invalid JSON at line 3, column 14")
}

func TestConfigTruncatedJSON(t *testing.T) {
	dir := writeBundle(t, `{"ociVersion": "1.0.0"`)
	expectError(t, dir, "", "config.json", "invalid JSON")
}

func TestConfigWrongType(t *testing.T) {
	dir := writeBundle(t, strings.Replace(validConfig, `["sh"]`, `"sh"`, 1))
	expectError(t, dir, "process.args", "config.json", "string", "line 3")
}

func TestOCIVersionMissing(t *testing.T) {
	dir := writeBundle(t, strings.Replace(validConfig, `"ociVersion": "1.0.2-dev",`, "", 1))
	expectError(t, dir, "ociVersion", "missing")
}

func TestOCIVersionUnsupported(t *testing.T) {
	for _, v := range []string{"0.9.0", "2.0.0", "1.4.0", "1.0", "one"} {
		dir := writeBundle(t, strings.Replace(validConfig, "1.0.2-dev", v, 1))
		expectError(t, dir, "ociVersion", "unsupported", `"`+v+`"`)
	}
}

func TestProcessMissing(t *testing.T) {
	dir := writeBundle(t, `{"ociVersion": "1.0.0", "root": {"path": "rootfs"}}`)
	expectError(t, dir, "process", "missing")
}

func TestProcessArgsEmpty(t *testing.T) {
	for _, args := range []string{`[]`, `null`} {
		dir := writeBundle(t, strings.Replace(validConfig, `["sh"]`, args, 1))
		expectError(t, dir, "process.args", "got none")
	}
}

func TestProcessCwdMissing(t *testing.T) {
	dir := writeBundle(t, strings.Replace(validConfig, `, "cwd": "/"`, "", 1))
	expectError(t, dir, "process.cwd", "missing")
}

func TestProcessCwdRelative(t *testing.T) {
	dir := writeBundle(t, strings.Replace(validConfig, `"cwd": "/"`, `"cwd": "home/user"`, 1))
	expectError(t, dir, "process.cwd", `"home/user"`, "not an absolute path")
}

func TestRootMissing(t *testing.T) {
	dir := writeBundle(t, `{"ociVersion": "1.0.0", "process": {"args": ["sh"], "cwd": "/"}}`)
	expectError(t, dir, "root", "missing")
}

func TestRootPathMissing(t *testing.T) {
	dir := writeBundle(t, strings.Replace(validConfig, `"path": "rootfs"`, `"readonly": true`, 1))
	expectError(t, dir, "root.path", "missing")
}

func TestRootfsDirMissing(t *testing.T) {
	dir := writeBundle(t, strings.Replace(validConfig, `"path": "rootfs"`, `"path": "image"`, 1))
	expectError(t, dir, "root.path", `"image"`, "not found", filepath.Join(dir, "image"))
}

func TestRootfsNotADirectory(t *testing.T) {
	dir := writeBundle(t, strings.Replace(validConfig, `"path": "rootfs"`, `"path": "config.json"`, 1))
	expectError(t, dir, "root.path", `"config.json"`, "not a directory")
}

func withHooks(hooks string) string {
	return strings.Replace(validConfig, `"ociVersion"`, `"hooks": `+hooks+`, "ociVersion"`, 1)
}

func TestHookPathMustBeAbsolute(t *testing.T) {
	dir := writeBundle(t, withHooks(`{"poststart": [{"path": "/bin/true"}, {"path": "hook.sh"}]}`))
	expectError(t, dir, "hooks.poststart[1].path", `"hook.sh"`, "not an absolute path")
}

func TestHookTimeoutMustBePositive(t *testing.T) {
	dir := writeBundle(t, withHooks(`{"createRuntime": [{"path": "/bin/true", "timeout": 0}]}`))
	expectError(t, dir, "hooks.createRuntime[0].timeout", "positive")
}

func TestStartContainerHooksAreRefused(t *testing.T) {
	dir := writeBundle(t, withHooks(`{"startContainer": [{"path": "/bin/true"}]}`))
	expectError(t, dir, "hooks.startContainer", "not supported")
}
