package cgroups

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// files is one cgroup's directory in one hierarchy.
type files string

// write writes value to the cgroup file name, which must exist: a cgroup
// file is never created, and one that is missing is a controller the
// kernel lacks, which the caller checks for with has.
func (f files) write(name, value string) error {
	file, err := os.OpenFile(filepath.Join(string(f), name), os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		return fmt.Errorf("cgroups: %w", err)
	}
	_, err = file.WriteString(value)
	if closeErr := file.Close(); err == nil {
		err = closeErr
	}
	if err != nil {
		return fmt.Errorf("cgroups: write %q to %s: %w", value, filepath.Join(string(f), name), err)
	}
	return nil
}

func (f files) has(name string) bool {
	_, err := os.Stat(filepath.Join(string(f), name))
	return err == nil
}

func (f files) read(name string) (string, error) {
	data, err := os.ReadFile(filepath.Join(string(f), name))
	if err != nil {
		return "", fmt.Errorf("cgroups: %w", err)
	}
	return strings.TrimSpace(string(data)), nil
}

// readUint reads a file holding one number ("max" reads as 0).
func (f files) readUint(name string) (uint64, error) {
	s, err := f.read(name)
	if err != nil || s == "max" {
		return 0, err
	}
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("cgroups: %s: %w", filepath.Join(string(f), name), err)
	}
	return n, nil
}

// readKeyed reads a flat keyed file ("key value" lines: memory.stat,
// cpu.stat).
func (f files) readKeyed(name string) (map[string]uint64, error) {
	s, err := f.read(name)
	if err != nil {
		return nil, err
	}
	m := map[string]uint64{}
	for _, line := range strings.Split(s, "\n") {
		k, v, ok := strings.Cut(line, " ")
		if n, err := strconv.ParseUint(v, 10, 64); ok && err == nil {
			m[k] = n
		}
	}
	return m, nil
}

// procs lists the processes in the cgroup.
func (f files) procs() ([]int, error) {
	s, err := f.read("cgroup.procs")
	if err != nil {
		return nil, err
	}
	var pids []int
	for _, line := range strings.Fields(s) {
		if pid, err := strconv.Atoi(line); err == nil {
			pids = append(pids, pid)
		}
	}
	return pids, nil
}

// itoa formats a limit, with max for -1 as v2 and pids.max spell it.
func maxOr(v int64) string {
	if v == unlimited {
		return "max"
	}
	return strconv.FormatInt(v, 10)
}

var errNotExist = os.ErrNotExist

func isNotExist(err error) bool { return errors.Is(err, errNotExist) }

func splitFields(s string) []string { return strings.Fields(s) }

func joinControllers(c []string) string { return strings.Join(c, ",") }

func splitControllers(key string) []string { return strings.Split(key, ",") }
