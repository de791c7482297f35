package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/moat-sandbox/moat/gofer"
	"github.com/moat-sandbox/moat/internal/bundle"
	"github.com/moat-sandbox/moat/internal/control"
)

// goferMain is `moat gofer --rootfs DIR [--readonly] [--bind ro|rw:PATH]...`,
// re-executed by `moat create` with the root file system's socket on
// control.GoferServeFD and each bind mount's on control.GoferBindFD0
// onwards. Each tree is served on its own socket, and so in a session of
// its own: no request on one can name a file of another.
func goferMain(args []string) int {
	a, err := parseGoferArgs(args)
	if err == nil {
		errs := make(chan error, 1+len(a.binds))
		go func() { errs <- gofer.Serve(control.GoferServeFD, a.rootfs, a.readonly) }()
		for i, b := range a.binds {
			go func() {
				if err := gofer.Serve(control.GoferBindFD0+i, b.path, b.readonly); err != nil {
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

type goferArgs struct {
	rootfs   string
	readonly bool
	binds    []goferTree
}

// goferTree is a host tree the gofer serves.
type goferTree struct {
	path     string
	readonly bool
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
