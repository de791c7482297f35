package bench

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/moat-sandbox/moat/internal/ocirun"
)

// Kinds of runtime.
const (
	// KindNative runs the workload on the host, chrooted into the bundle's
	// rootfs so that it executes the very same files as the containers.
	KindNative = "native"
	// KindOCI is any runtime with runc's command line.
	KindOCI = "oci"
	// KindCommand is a sandbox of the host's own root file system that
	// runs a command line given after its own (moat sandbox --, bwrap,
	// runsc do): Binary and Args, then the workload's argv, in a scratch
	// directory. It runs the Wall workloads alone: the others' programs
	// and mounts are the bundle's.
	KindCommand = "command"
)

// Runtime is one entry of runtimes.json.
type Runtime struct {
	Name string `json:"name"`
	Kind string `json:"kind"`
	// Binary is an absolute path, a bare name looked up in $PATH, or a path
	// starting with $BIN, the directory moat-bench was installed in (where
	// `make` puts bin/moat and the current runsc).
	Binary string `json:"binary,omitempty"`
	// RunscPlatform, when set, makes the runtime gVisor's runsc on that
	// platform: it is given ocirun.RunscFlags, then Args.
	RunscPlatform string `json:"runsc_platform,omitempty"`
	// Args are global flags, given before the subcommand.
	Args []string `json:"args,omitempty"`
	// Note says what the runtime stands for in the comparison.
	Note string `json:"note,omitempty"`
	// Install says how to get the binary when it is missing.
	Install string `json:"install,omitempty"`
	// Skip, when set, leaves the runtime out of the default selection with
	// this reason; naming it in --runtime overrides it.
	Skip string `json:"skip,omitempty"`
	// Needs are files the runtime cannot run without (a device such as
	// /dev/kvm): where one is missing, the runtime is skipped, saying so.
	Needs []string `json:"needs,omitempty"`
	// Serves says that the binary is moat, whose `BINARY ARGS serve`
	// serves E2B's API: the runtime runs the Serve workloads, and only
	// such runtimes do.
	Serves bool `json:"serves,omitempty"`
}

// missing returns the first of the runtime's Needs this machine lacks, or
// "".
func (rt Runtime) missing() string {
	for _, p := range rt.Needs {
		if _, err := os.Stat(p); err != nil {
			return p
		}
	}
	return ""
}

//go:embed runtimes.json
var defaultRuntimes []byte

// DefaultRuntimes returns the runtimes of runtimes.json.
func DefaultRuntimes() ([]Runtime, error) {
	return ParseRuntimes(defaultRuntimes)
}

// ParseRuntimes reads and checks a runtime list in the format of runtimes.json.
func ParseRuntimes(data []byte) ([]Runtime, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var rts []Runtime
	if err := dec.Decode(&rts); err != nil {
		return nil, fmt.Errorf("runtime list: %w", err)
	}
	seen := map[string]bool{}
	for i, rt := range rts {
		switch {
		case rt.Name == "":
			return nil, fmt.Errorf("runtime list: entry %d has no name", i)
		case seen[rt.Name]:
			return nil, fmt.Errorf("runtime list: name %q appears twice", rt.Name)
		case rt.Kind != KindNative && rt.Kind != KindOCI && rt.Kind != KindCommand:
			return nil, fmt.Errorf("runtime list: %s: kind %q is not %q, %q or %q", rt.Name, rt.Kind, KindNative, KindOCI, KindCommand)
		case rt.Kind != KindNative && rt.Binary == "":
			return nil, fmt.Errorf("runtime list: %s: an %s runtime needs a binary", rt.Name, rt.Kind)
		case rt.Kind == KindNative && rt.RunscPlatform != "":
			return nil, fmt.Errorf("runtime list: %s: runsc_platform %q on a runtime of kind %q", rt.Name, rt.RunscPlatform, rt.Kind)
		case rt.Serves && rt.Kind != KindOCI:
			return nil, fmt.Errorf("runtime list: %s: serves on a runtime of kind %q, not %q", rt.Name, rt.Kind, KindOCI)
		}
		seen[rt.Name] = true
	}
	return rts, nil
}

// SelectRuntimes returns the runtimes named, in the order named, or all of
// them when names is empty. A runtime named explicitly loses its Skip: the
// user asked for it.
func SelectRuntimes(all []Runtime, names []string) ([]Runtime, error) {
	if len(names) == 0 {
		return all, nil
	}
	var out []Runtime
	for _, name := range names {
		i := slices.IndexFunc(all, func(rt Runtime) bool { return rt.Name == name })
		if i < 0 {
			return nil, fmt.Errorf("unknown runtime %q (known: %s)", name, strings.Join(runtimeNames(all), ", "))
		}
		rt := all[i]
		rt.Skip = ""
		out = append(out, rt)
	}
	return out, nil
}

func runtimeNames(rts []Runtime) []string {
	var names []string
	for _, rt := range rts {
		names = append(names, rt.Name)
	}
	return names
}

// Flags are the global flags the runtime is run with.
func (rt Runtime) Flags() []string {
	if rt.RunscPlatform == "" {
		return rt.Args
	}
	return append(ocirun.RunscFlags(rt.RunscPlatform), rt.Args...)
}

// binaryPath finds the runtime's executable, or says why it cannot.
func (rt Runtime) binaryPath(binDir string) (string, error) {
	if rt.Kind == KindNative {
		return "", nil
	}
	var unknown []string
	name := os.Expand(rt.Binary, func(v string) string {
		if v == "BIN" {
			return binDir
		}
		unknown = append(unknown, "$"+v)
		return ""
	})
	if len(unknown) > 0 {
		return "", fmt.Errorf("binary %q uses %s; only $BIN is known", rt.Binary, strings.Join(unknown, ", "))
	}
	// Shortened, so that an error names bin/runsc as the report does.
	return ocirun.LookPath(displayPath(name))
}
