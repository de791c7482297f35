package conformance

import (
	"bufio"
	"bytes"
	"embed"
	"fmt"
	"path"
	"strings"
)

// The sources are embedded so that the runner binary works from any
// directory, not only inside a checkout.
//
//go:embed programs/*.c programs/check.h
var programFiles embed.FS

// checkHeader is the header every program includes.
const checkHeader = "check.h"

// Program is one conformance program, programs/<family>_<topic>.c.
type Program struct {
	Name   string   // "family/topic", e.g. "file/read_write"
	Family string   // the file name up to the first '_'
	File   string   // the source file name, e.g. "file_read_write.c"
	Covers []string // the system calls it asserts the behaviour of
	// MaskedPaths and ReadonlyPaths go into the container config's
	// linux.maskedPaths and linux.readonlyPaths: the paths a program's
	// "// masked-paths:" and "// readonly-paths:" lines name.
	MaskedPaths, ReadonlyPaths []string
	// Sysctl goes into the container config's linux.sysctl, from
	// "// sysctl: name=value" lines.
	Sysctl map[string]string
	// Capabilities are the bounding, permitted and effective sets of
	// the container's process (else it has none), from "// capabilities:"
	// lines naming them (CAP_CHOWN ...).
	Capabilities []string
	// Places are where, besides the bundle's tmpfs, the program's /tmp
	// is in further runs in a runtime: its "// places:" line's PlaceBind
	// and PlaceRoot.
	Places []string
	source []byte
}

// Where a program's /tmp is in a runtime. The program sees it in its
// environment, CONFORMANCE_PLACE, to know which checks hold there.
const (
	PlaceTmpfs = "tmpfs" // the bundle's tmpfs, under a read-only root: every program
	PlaceBind  = "bind"  // a host directory bind-mounted read-write: the agent's workspace
	PlaceRoot  = "root"  // no mount: the root file system, writable (moat's overlay)
)

// RunName is the name of the program's run with /tmp at place.
func (p Program) RunName(place string) string {
	if place == PlaceTmpfs {
		return p.Name
	}
	return p.Name + "@" + place
}

// Runs are the places of the program's runs in a runtime.
func (p Program) Runs() []string {
	return append([]string{PlaceTmpfs}, p.Places...)
}

// Programs returns the embedded conformance programs, sorted by file name.
func Programs() ([]Program, error) {
	entries, err := programFiles.ReadDir("programs")
	if err != nil {
		return nil, err
	}
	var progs []Program
	for _, e := range entries {
		if path.Ext(e.Name()) != ".c" {
			continue
		}
		src, err := programFiles.ReadFile("programs/" + e.Name())
		if err != nil {
			return nil, err
		}
		p, err := parseProgram(e.Name(), src)
		if err != nil {
			return nil, err
		}
		progs = append(progs, p)
	}
	return progs, nil
}

// parseProgram derives a Program from its file name and source; the source
// must carry exactly one "// covers: name ..." line.
func parseProgram(file string, src []byte) (Program, error) {
	stem := strings.TrimSuffix(file, ".c")
	family, topic, ok := strings.Cut(stem, "_")
	if !ok || family == "" || topic == "" || stem == file {
		return Program{}, fmt.Errorf("%s: name is not <family>_<topic>.c", file)
	}
	p := Program{Name: family + "/" + topic, Family: family, File: file, source: src}
	found := false
	sc := bufio.NewScanner(bytes.NewReader(src))
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "// masked-paths:"); ok {
			p.MaskedPaths = append(p.MaskedPaths, strings.Fields(rest)...)
		}
		if rest, ok := strings.CutPrefix(sc.Text(), "// readonly-paths:"); ok {
			p.ReadonlyPaths = append(p.ReadonlyPaths, strings.Fields(rest)...)
		}
		if rest, ok := strings.CutPrefix(sc.Text(), "// capabilities:"); ok {
			for _, c := range strings.Fields(rest) {
				if !strings.HasPrefix(c, "CAP_") {
					return Program{}, fmt.Errorf("%s: capability %q is not CAP_<NAME>", file, c)
				}
				p.Capabilities = append(p.Capabilities, c)
			}
		}
		if rest, ok := strings.CutPrefix(sc.Text(), "// sysctl:"); ok {
			name, value, found := strings.Cut(strings.TrimSpace(rest), "=")
			if !found || name == "" {
				return Program{}, fmt.Errorf("%s: sysctl line %q is not name=value", file, rest)
			}
			if p.Sysctl == nil {
				p.Sysctl = map[string]string{}
			}
			p.Sysctl[name] = value
		}
		if rest, ok := strings.CutPrefix(sc.Text(), "// places:"); ok {
			for _, place := range strings.Fields(rest) {
				if place != PlaceBind && place != PlaceRoot {
					return Program{}, fmt.Errorf("%s: place %q: want %q or %q", file, place, PlaceBind, PlaceRoot)
				}
				p.Places = append(p.Places, place)
			}
		}
		rest, ok := strings.CutPrefix(sc.Text(), "// covers:")
		if !ok {
			continue
		}
		if found {
			return Program{}, fmt.Errorf("%s: more than one \"// covers:\" line", file)
		}
		found = true
		p.Covers = strings.Fields(rest)
	}
	if err := sc.Err(); err != nil {
		return Program{}, fmt.Errorf("%s: %w", file, err)
	}
	if len(p.Covers) == 0 {
		return Program{}, fmt.Errorf("%s: no \"// covers: syscall ...\" line", file)
	}
	return p, nil
}

// binaryName is the file name of the program's binary in the rootfs.
func (p Program) binaryName() string {
	return strings.TrimSuffix(p.File, ".c")
}
