package bench

import (
	"context"
	"embed"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// The sources travel inside moat-bench, so that the programs measured are
// always the ones this binary was built with, wherever it runs.
//
//go:embed workloads/*.c workloads/*.h
var sources embed.FS

// buildPrograms compiles the programs of workloads into outDir with
// `gcc -static -O2`, using srcDir to hold the sources. A program that fails
// to build is left out and its error returned by name: its workloads are then
// skipped, the others still run.
func buildPrograms(ctx context.Context, workloads []Workload, srcDir, outDir string) (map[string]error, error) {
	if err := os.CopyFS(srcDir, sources); err != nil {
		return nil, err
	}
	failed := map[string]error{}
	for _, w := range workloads {
		for _, program := range w.programs() {
			src := filepath.Join(srcDir, "workloads", program+".c")
			out, err := exec.CommandContext(ctx, "gcc", "-static", "-O2", "-Wall", "-o", filepath.Join(outDir, program), src).CombinedOutput()
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			if err != nil {
				failed[program] = fmt.Errorf("gcc %s: %v: %s", program+".c", err, strings.TrimSpace(string(out)))
			}
		}
	}
	return failed, nil
}
