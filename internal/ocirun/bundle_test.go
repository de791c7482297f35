package ocirun

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"

	specs "github.com/opencontainers/runtime-spec/specs-go"
)

func TestWriteSpecReplacesTheConfigWhole(t *testing.T) {
	dir := t.TempDir()
	first := Spec([]string{"/bin/true"}, []string{"PATH=/bin"}, "first")
	second := Spec([]string{"/bin/echo", "a longer command line than the first"}, nil, "second")
	second.Mounts = []specs.Mount{Proc("nosuid"), Tmpfs("/tmp", "mode=1777")}
	for _, spec := range []*specs.Spec{first, second} {
		if err := WriteSpec(dir, spec); err != nil {
			t.Fatal(err)
		}
	}
	got, err := ReadSpec(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, second) {
		t.Errorf("read back %+v\nwant %+v", got, second)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 || entries[0].Name() != "config.json" {
		t.Errorf("the bundle holds %v, want config.json alone", entries)
	}
}

func TestReadSpecNamesTheFileItCannotParse(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "config.json")
	if err := os.WriteFile(file, []byte("{"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadSpec(dir); err == nil || err.Error()[:len(file)] != file {
		t.Errorf("ReadSpec: %v, want an error naming %s", err, file)
	}
}

// TestSpecIsolatesItsProcess: what every caller relies on without saying
// so: root in /, the bundle's rootfs read-only, a namespace of each kind
// container engines give, no mount the caller did not ask for.
func TestSpecIsolatesItsProcess(t *testing.T) {
	s := Spec([]string{"sh"}, []string{"PATH=/bin"}, "h")
	if s.Process.User.UID != 0 || s.Process.Cwd != "/" || s.Hostname != "h" || s.Version != specs.Version {
		t.Errorf("process %+v, hostname %q, version %q", s.Process, s.Hostname, s.Version)
	}
	if s.Root.Path != Rootfs || !s.Root.Readonly {
		t.Errorf("root %+v, want %s read-only", s.Root, Rootfs)
	}
	kinds := map[specs.LinuxNamespaceType]bool{}
	for _, ns := range s.Linux.Namespaces {
		if ns.Path != "" || kinds[ns.Type] {
			t.Errorf("namespace %+v: joined or repeated", ns)
		}
		kinds[ns.Type] = true
	}
	for _, want := range []specs.LinuxNamespaceType{specs.PIDNamespace, specs.MountNamespace, specs.IPCNamespace, specs.UTSNamespace, specs.NetworkNamespace} {
		if !kinds[want] {
			t.Errorf("no %s namespace", want)
		}
	}
	if len(s.Mounts) != 0 {
		t.Errorf("mounts %v, want none", s.Mounts)
	}
}
