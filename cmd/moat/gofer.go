package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/moat-sandbox/moat/gofer"
	"github.com/moat-sandbox/moat/internal/control"
)

// goferMain is `moat gofer --rootfs DIR [--readonly]`, re-executed by
// `moat create` with its end of the gofer socket on control.GoferServeFD.
func goferMain(args []string) int {
	rootfs, readonly, err := parseGoferArgs(args)
	if err == nil {
		err = gofer.Serve(control.GoferServeFD, rootfs, readonly)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "moat: gofer: %v\n", err)
		return 1
	}
	return 0
}

func parseGoferArgs(args []string) (rootfs string, readonly bool, err error) {
	fs := flag.NewFlagSet("gofer", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&rootfs, "rootfs", "", "")
	fs.BoolVar(&readonly, "readonly", false, "")
	if err := fs.Parse(args); err != nil {
		return "", false, err
	}
	switch {
	case fs.NArg() != 0:
		return "", false, fmt.Errorf("unexpected arguments %q", fs.Args())
	case rootfs == "":
		return "", false, errors.New("--rootfs is required")
	case !filepath.IsAbs(rootfs):
		// The gofer runs in "/": a relative root would name the wrong tree.
		return "", false, fmt.Errorf("--rootfs %q is not absolute", rootfs)
	}
	return rootfs, readonly, nil
}
