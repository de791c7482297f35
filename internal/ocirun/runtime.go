package ocirun

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// Runtime is one runtime binary and the global flags it is always run with.
type Runtime struct {
	Name  string   // what reports call it: "runc", "runsc", "moat"
	Path  string   // the binary, absolute
	Flags []string // global flags, given after --root and before the subcommand
}

// runcPath is where Debian installs runc: the PATH of a user other than
// root usually lacks /usr/sbin.
const runcPath = "/usr/sbin/runc"

// Find returns the runtime name stands for, as LookPath finds it, named
// after its binary.
func Find(name string) (*Runtime, error) {
	path, err := LookPath(name)
	if err != nil {
		return nil, err
	}
	return &Runtime{Name: filepath.Base(name), Path: path}, nil
}

// LookPath finds a runtime's binary: a name with a slash in it is a path,
// made absolute; runc is Debian's /usr/sbin/runc when that is there; any
// other name is looked up in PATH. The binary must be an executable file,
// and the error names the path as it was given.
func LookPath(name string) (string, error) {
	if name == "runc" && isExecutable(runcPath) {
		return runcPath, nil
	}
	if !strings.Contains(name, "/") {
		path, err := exec.LookPath(name)
		if err != nil {
			return "", fmt.Errorf("%s not found in $PATH", name)
		}
		return path, nil
	}
	path, err := filepath.Abs(name)
	if err != nil {
		return "", err
	}
	if !isExecutable(path) {
		return "", fmt.Errorf("%s not found or not executable", name)
	}
	return path, nil
}

func isExecutable(path string) bool {
	info, err := os.Stat(path)
	return err == nil && !info.IsDir() && info.Mode()&0o111 != 0
}

// Version is the first line of `BINARY --version`, or "" if it prints none.
func (rt *Runtime) Version(ctx context.Context) string {
	var out strings.Builder
	x := Run(ctx, exec.Command(rt.Path, "--version"), Stdio{Stdout: &out}, Limits{Timeout: 10 * time.Second})
	if x.Err() != nil {
		return ""
	}
	line, _, _ := strings.Cut(out.String(), "\n")
	return strings.TrimSpace(line)
}
