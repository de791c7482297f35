// Package bundle loads an OCI bundle (a directory holding config.json and a
// root filesystem) and checks the parts of config.json that moat needs before
// it creates anything for a container.
//
// Every problem comes back as one *Error naming the file, the field and the
// value, so that the CLI can print it as one line. The package only reads:
// it must never write into a bundle or follow anything outside the paths the
// caller and the config name.
package bundle

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// ConfigName is the file in a bundle that holds the container's spec.
const ConfigName = "config.json"

// Bundle is a loaded, validated bundle.
type Bundle struct {
	Dir    string      // absolute bundle directory
	Spec   *specs.Spec // parsed config.json
	Rootfs string      // absolute root filesystem directory
	// Binds are the spec's bind mounts, in its order.
	Binds []BindMount
}

// Error is one problem with a bundle. Field is the config.json field at
// fault in dotted JSON form ("process.args"), or empty when the problem is
// the bundle directory or the file itself.
type Error struct {
	Bundle string // bundle directory as the caller gave it, made absolute
	File   string // ConfigName, or empty when the directory is at fault
	Field  string
	Reason string
}

func (e *Error) Error() string {
	switch {
	case e.File == "":
		return fmt.Sprintf("bundle %s: %s", e.Bundle, e.Reason)
	case e.Field == "":
		return fmt.Sprintf("bundle %s: %s: %s", e.Bundle, e.File, e.Reason)
	default:
		return fmt.Sprintf("bundle %s: %s: %s: %s", e.Bundle, e.File, e.Field, e.Reason)
	}
}

// Load reads and validates the bundle in dir.
func Load(dir string) (*Bundle, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, &Error{Bundle: dir, Reason: fmt.Sprintf("cannot make the path absolute: %v", err)}
	}
	dirError := func(format string, args ...any) error {
		return &Error{Bundle: abs, Reason: fmt.Sprintf(format, args...)}
	}
	configError := func(field, format string, args ...any) error {
		return &Error{Bundle: abs, File: ConfigName, Field: field, Reason: fmt.Sprintf(format, args...)}
	}

	info, err := os.Stat(abs)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, dirError("directory not found")
	case err != nil:
		return nil, dirError("%v", unwrapPath(err))
	case !info.IsDir():
		return nil, dirError("not a directory")
	}

	data, err := os.ReadFile(filepath.Join(abs, ConfigName))
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, dirError("%s not found", ConfigName)
	case err != nil:
		return nil, configError("", "cannot read: %v", unwrapPath(err))
	}

	var spec specs.Spec
	if err := json.Unmarshal(data, &spec); err != nil {
		return nil, decodeError(abs, data, err)
	}
	if err := validate(&spec, abs); err != nil {
		return nil, err
	}
	binds, err := bindMounts(&spec, abs)
	if err != nil {
		return nil, err
	}
	return &Bundle{Dir: abs, Spec: &spec, Rootfs: rootfsPath(abs, spec.Root.Path), Binds: binds}, nil
}

// rootfsPath resolves root.path, which the runtime spec makes relative to
// the bundle unless it is absolute.
func rootfsPath(bundleDir, rootPath string) string {
	if filepath.IsAbs(rootPath) {
		return filepath.Clean(rootPath)
	}
	return filepath.Join(bundleDir, rootPath)
}

// decodeError turns a json error into an *Error that says where in the file
// the problem is, because "invalid character" alone sends the user hunting.
func decodeError(bundleDir string, data []byte, err error) error {
	e := &Error{Bundle: bundleDir, File: ConfigName}
	var syntaxErr *json.SyntaxError
	var typeErr *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syntaxErr):
		line, col := position(data, syntaxErr.Offset)
		e.Reason = fmt.Sprintf("invalid JSON at line %d, column %d: %v", line, col, syntaxErr)
	case errors.As(err, &typeErr):
		line, col := position(data, typeErr.Offset)
		e.Field = typeErr.Field
		e.Reason = fmt.Sprintf("got a JSON %s, want %s (line %d, column %d)", typeErr.Value, typeErr.Type, line, col)
	default:
		e.Reason = fmt.Sprintf("invalid JSON: %v", err)
	}
	return e
}

// position converts a byte offset into 1-based line and column numbers.
func position(data []byte, offset int64) (line, col int) {
	if offset > int64(len(data)) {
		offset = int64(len(data))
	}
	before := data[:offset]
	line = bytes.Count(before, []byte("\n")) + 1
	col = int(offset) - (bytes.LastIndexByte(before, '\n') + 1)
	if col == 0 {
		col = 1
	}
	return line, col
}

// unwrapPath drops the path from a *fs.PathError: the message already names
// the bundle and file, and saying them twice makes the line hard to read.
func unwrapPath(err error) error {
	var pathErr *fs.PathError
	if errors.As(err, &pathErr) {
		return pathErr.Err
	}
	return err
}
