package engines

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPodmanHooksDir: hooks from podman's --hooks-dir (OCI hook files,
// which podman puts into config.json) run under moat as under runc, at
// their stages, each reading the container's state.
func TestPodmanHooksDir(t *testing.T) {
	needPackages(t, "podman", "podman")
	tarball := busyboxTar(t)
	if r := run(t, "podman", "import", "-q", tarball, image); r.code != 0 {
		t.Fatalf("podman import: %s", r.stderr)
	}
	for _, rt := range runtimes(t) {
		t.Run(rt.name, func(t *testing.T) {
			hooks, out := t.TempDir(), t.TempDir()
			stages := []string{"createRuntime", "poststart", "poststop"}
			for _, stage := range stages {
				hook := map[string]any{
					"version": "1.0.0",
					"hook": map[string]any{"path": "/bin/sh", "args": []string{"sh", "-c",
						fmt.Sprintf("cat > %s/%s.json", out, stage)}},
					"when":   map[string]any{"always": true},
					"stages": []string{stage},
				}
				data, _ := json.Marshal(hook)
				if err := os.WriteFile(filepath.Join(hooks, stage+".json"), data, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			p := client{t: t, rt: rt, argv: []string{"podman", "--runtime", rt.path, "--hooks-dir", hooks}}
			if got := p.ok("run", "--rm", image, "echo", "hooked"); got != "hooked\n" {
				t.Errorf("output %q", got)
			}
			for _, stage := range stages {
				data, err := os.ReadFile(filepath.Join(out, stage+".json"))
				if err != nil {
					t.Errorf("%s hook did not run: %v", stage, err)
					continue
				}
				var st struct{ ID, Status string }
				if err := json.Unmarshal(data, &st); err != nil || st.ID == "" || st.Status == "" {
					t.Errorf("%s hook read %q: %v", stage, data, err)
				}
				if stage == "poststop" && !strings.Contains(st.Status, "stopped") {
					t.Errorf("poststop hook read status %q", st.Status)
				}
			}
		})
	}
}
