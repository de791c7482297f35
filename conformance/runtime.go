package conformance

import (
	"fmt"

	"github.com/moat-sandbox/moat/internal/ocirun"
)

// Runtime is an OCI runtime driven through runc's command line:
// `PATH --root STATE FLAGS... run --bundle BUNDLE ID`, `kill ID KILL` and
// `delete --force ID`.
type Runtime = ocirun.Runtime

// ResolveRuntime finds the binary for a runtime name: runc (Debian's
// /usr/sbin/runc, else PATH), runsc (runscPath if set, else PATH; with
// ocirun.RunscFlags, on runsc's default platform), moat (PATH), or the path
// of any runc-compatible binary. extraFlags are appended to the runtime's
// global flags.
func ResolveRuntime(name, runscPath string, extraFlags []string) (*Runtime, error) {
	binary := name
	if name == "runsc" && runscPath != "" {
		binary = runscPath
	}
	rt, err := ocirun.Find(binary)
	if err != nil {
		return nil, fmt.Errorf("runtime %q: %w", name, err)
	}
	if name == "runsc" {
		rt.Name, rt.Flags = name, ocirun.RunscFlags("")
	}
	rt.Flags = append(rt.Flags, extraFlags...)
	return rt, nil
}
