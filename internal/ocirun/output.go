package ocirun

import (
	"errors"
	"io"
	"os"
	"path/filepath"
)

// Output is a run's standard output and error, captured in two files.
// Files, not pipes: a container's processes may keep a pipe open after the
// runtime has exited (a created container's init keeps create's stdio, a
// sentry its guest's), so that reading it would hang the caller, and a run
// would be timed to when the last of them closed it instead of to the
// runtime's exit.
type Output struct {
	Stdout, Stderr *os.File
}

// NewOutput creates the files stdout and stderr in dir.
func NewOutput(dir string) (*Output, error) {
	stdout, err := os.Create(filepath.Join(dir, "stdout"))
	if err != nil {
		return nil, err
	}
	stderr, err := os.Create(filepath.Join(dir, "stderr"))
	if err != nil {
		stdout.Close()
		return nil, err
	}
	return &Output{Stdout: stdout, Stderr: stderr}, nil
}

// Stdio gives the files as a process's stdout and stderr, stdin empty.
func (o *Output) Stdio() Stdio {
	return Stdio{Stdout: o.Stdout, Stderr: o.Stderr}
}

// Reset empties both files for the next run.
func (o *Output) Reset() error {
	for _, f := range []*os.File{o.Stdout, o.Stderr} {
		if err := f.Truncate(0); err != nil {
			return err
		}
		if _, err := f.Seek(0, io.SeekStart); err != nil {
			return err
		}
	}
	return nil
}

// Read returns what the files hold.
func (o *Output) Read() (stdout, stderr string, err error) {
	out, err := os.ReadFile(o.Stdout.Name())
	if err != nil {
		return "", "", err
	}
	errOut, err := os.ReadFile(o.Stderr.Name())
	return string(out), string(errOut), err
}

// Close closes both files; it leaves them on disk.
func (o *Output) Close() error {
	return errors.Join(o.Stdout.Close(), o.Stderr.Close())
}
