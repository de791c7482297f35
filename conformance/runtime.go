package conformance

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// Runtime is an OCI runtime driven through runc's command line:
// `PATH FLAGS... --root STATE run --bundle BUNDLE ID`, `kill ID KILL` and
// `delete --force ID`.
type Runtime struct {
	Name  string   // as the user named it: "runc", "runsc", "moat" or a path
	Path  string   // the binary
	Flags []string // global flags, placed before the subcommand
}

// runcPath is where Debian installs runc.
const runcPath = "/usr/sbin/runc"

// ResolveRuntime finds the binary for a runtime name: runc (Debian's
// /usr/sbin/runc, else PATH), runsc (runscPath if set, else PATH; always
// with --network=none), moat (PATH), or the path of any runc-compatible
// binary. extraFlags are appended to the runtime's global flags.
func ResolveRuntime(name, runscPath string, extraFlags []string) (*Runtime, error) {
	rt := &Runtime{Name: name}
	var err error
	switch {
	case name == "runc":
		rt.Path = runcPath
		if _, statErr := os.Stat(runcPath); statErr != nil {
			rt.Path, err = exec.LookPath("runc")
		}
	case name == "runsc":
		// gVisor's sandbox would otherwise get the host's network
		// stack; the container config asks for none.
		rt.Flags = []string{"--network=none"}
		rt.Path = runscPath
		if rt.Path == "" {
			rt.Path, err = exec.LookPath("runsc")
		}
	case strings.ContainsRune(name, '/'):
		rt.Name = filepath.Base(name)
		rt.Path, err = filepath.Abs(name)
	default:
		rt.Path, err = exec.LookPath(name)
	}
	if err != nil {
		return nil, fmt.Errorf("runtime %q: %w", name, err)
	}
	info, err := os.Stat(rt.Path)
	if err != nil {
		return nil, fmt.Errorf("runtime %q: %w", name, err)
	}
	if info.IsDir() || info.Mode()&0o111 == 0 {
		return nil, fmt.Errorf("runtime %q: %s is not an executable file", name, rt.Path)
	}
	rt.Flags = append(rt.Flags, extraFlags...)
	return rt, nil
}

// command builds `PATH FLAGS... --root stateRoot args...`.
func (rt *Runtime) command(stateRoot string, args ...string) *exec.Cmd {
	full := append(append(append([]string{}, rt.Flags...), "--root", stateRoot), args...)
	return exec.Command(rt.Path, full...)
}
