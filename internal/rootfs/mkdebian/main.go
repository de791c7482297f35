// Command mkdebian builds the cached Debian rootfs of the integration tests
// ahead of time (`make rootfs-debian`) and prints its path. The tests build
// it on first use anyway; this is for doing it by hand. With packages, it
// builds and prints the cached copy with those installed too
// (rootfs.DebianWith: make bench's rootfs has python3-pytest).
//
// Usage: mkdebian CACHE-DIR [PACKAGE...]
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"time"

	"github.com/moat-sandbox/moat/internal/rootfs"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: mkdebian CACHE-DIR [PACKAGE...]")
		os.Exit(2)
	}
	if err := run(os.Args[1], os.Args[2:]); err != nil {
		fmt.Fprintln(os.Stderr, "mkdebian:", err)
		os.Exit(1)
	}
}

func run(cacheDir string, pkgs []string) error {
	// Ctrl-C cancels the build, which then kills debootstrap's processes
	// rather than leaving them to finish a tree nobody will use.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	start := time.Now()
	dir, err := rootfs.Debian(ctx, cacheDir)
	if err == nil && len(pkgs) > 0 {
		dir, err = rootfs.DebianWith(ctx, cacheDir, pkgs...)
	}
	if err != nil {
		return err
	}
	fmt.Printf("%s (%.1fs)\n", dir, time.Since(start).Seconds())
	return nil
}
