package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"

	"github.com/moat-sandbox/moat/gofer"
	"github.com/moat-sandbox/moat/internal/bundle"
	"github.com/moat-sandbox/moat/internal/confine"
	"github.com/moat-sandbox/moat/internal/control"
	"github.com/moat-sandbox/moat/internal/heaprelease"
)

// goferMain is `moat gofer --rootfs DIR [--readonly] [--bind ro|rw:PATH]...`,
// re-executed by `moat create` with the root file system's socket on
// control.GoferServeFD and each bind mount's on control.GoferBindFD0
// onwards. Each tree is served on its own socket, and so in a session of
// its own: no request on one can name a file of another.
func goferMain(args []string) int {
	a, err := parseGoferArgs(args)
	var paths []string
	if err == nil {
		paths, err = confineGofer(a)
	}
	if err == nil {
		heaprelease.Start()
		errs := make(chan error, 1+len(a.binds))
		go func() { errs <- gofer.Serve(control.GoferServeFD, paths[0], a.readonly) }()
		for i, b := range a.binds {
			go func() {
				if err := gofer.Serve(control.GoferBindFD0+i, paths[1+i], b.readonly); err != nil {
					errs <- fmt.Errorf("bind mount of %s: %w", b.path, err)
					return
				}
				errs <- nil
			}()
		}
		for range 1 + len(a.binds) {
			if e := <-errs; e != nil && err == nil {
				err = e
			}
		}
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "moat: gofer: %v\n", err)
		return 1
	}
	return 0
}

// confineGofer shuts the gofer in (in the namespaces the CLI started it
// in, sandbox.go) before it serves a request: its root becomes its trees
// alone, it keeps only the capabilities and ids a.caps and a.ids say, and
// its seccomp allowlist goes on. It returns each tree's path in the new
// root: the rootfs's, then each bind mount's.
func confineGofer(a goferArgs) ([]string, error) {
	if !confineFully {
		paths := []string{a.rootfs}
		for _, b := range a.binds {
			paths = append(paths, b.path)
		}
		return paths, nil
	}
	runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	poller, err := confine.StartPoller()
	if err != nil {
		return nil, err
	}
	trees := []confine.Tree{{Path: a.rootfs, ReadOnly: a.readonly}}
	for _, b := range a.binds {
		trees = append(trees, confine.Tree{Path: b.path, ReadOnly: b.readonly})
	}
	paths, err := confine.EnterTrees(trees)
	if err != nil {
		return nil, err
	}
	if err := confine.DropPrivileges(a.caps, a.ids); err != nil {
		return nil, err
	}
	return paths, confine.GoferCalls.With(poller.Calls()).Install(a.hostCalls)
}

type goferArgs struct {
	rootfs   string
	readonly bool
	binds    []goferTree
	// caps are the capabilities the gofer keeps, ids the user it becomes
	// (nil: it stays root), hostCalls its filter's mode.
	caps      uint64
	ids       *confine.IDs
	hostCalls confine.Mode
}

// goferTree is a host tree the gofer serves.
type goferTree struct {
	path     string
	readonly bool
}

// idsArg is the --user value for ids: UID:GID[:GROUP,...].
func idsArg(ids confine.IDs) string {
	v := fmt.Sprintf("%d:%d", ids.UID, ids.GID)
	for i, g := range ids.Groups {
		sep := ","
		if i == 0 {
			sep = ":"
		}
		v += sep + strconv.FormatUint(uint64(g), 10)
	}
	return v
}

func parseIDs(v string) (*confine.IDs, error) {
	f := strings.SplitN(v, ":", 3)
	if len(f) < 2 {
		return nil, fmt.Errorf("--user %q: want UID:GID[:GROUPS]", v)
	}
	var ids confine.IDs
	nums := []*uint32{&ids.UID, &ids.GID}
	for i, p := range nums {
		n, err := strconv.ParseUint(f[i], 10, 32)
		if err != nil {
			return nil, fmt.Errorf("--user %q: %w", v, err)
		}
		*p = uint32(n)
	}
	if len(f) == 3 {
		for _, g := range strings.Split(f[2], ",") {
			n, err := strconv.ParseUint(g, 10, 32)
			if err != nil {
				return nil, fmt.Errorf("--user %q: %w", v, err)
			}
			ids.Groups = append(ids.Groups, uint32(n))
		}
	}
	return &ids, nil
}

// bindArg is the --bind value that serves m.
func bindArg(m bundle.BindMount) string {
	if m.ReadOnly {
		return "ro:" + m.Source
	}
	return "rw:" + m.Source
}

func parseGoferArgs(args []string) (goferArgs, error) {
	var a goferArgs
	fs := flag.NewFlagSet("gofer", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&a.rootfs, "rootfs", "", "")
	fs.BoolVar(&a.readonly, "readonly", false, "")
	fs.Func("bind", "", func(v string) error {
		mode, path, ok := strings.Cut(v, ":")
		if !ok || (mode != "ro" && mode != "rw") {
			return fmt.Errorf("--bind %q: want ro:PATH or rw:PATH", v)
		}
		if !filepath.IsAbs(path) {
			return fmt.Errorf("--bind %q: the path is not absolute", v)
		}
		a.binds = append(a.binds, goferTree{path: path, readonly: mode == "ro"})
		return nil
	})
	fs.Func("caps", "", func(v string) (err error) {
		a.caps, err = strconv.ParseUint(v, 0, 64)
		return err
	})
	fs.Func("user", "", func(v string) error {
		ids, err := parseIDs(v)
		a.ids = ids
		return err
	})
	fs.Func("host-calls", "", func(v string) (err error) {
		a.hostCalls, err = confine.ParseMode(v)
		return err
	})
	if err := fs.Parse(args); err != nil {
		return goferArgs{}, err
	}
	switch {
	case fs.NArg() != 0:
		return goferArgs{}, fmt.Errorf("unexpected arguments %q", fs.Args())
	case a.rootfs == "":
		return goferArgs{}, errors.New("--rootfs is required")
	case !filepath.IsAbs(a.rootfs):
		// The gofer runs in "/": a relative root would name the wrong tree.
		return goferArgs{}, fmt.Errorf("--rootfs %q is not absolute", a.rootfs)
	}
	return a, nil
}
