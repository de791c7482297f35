package conformance

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// These tests run the whole suite: natively always (it needs only gcc),
// under runc when root, and under moat when MOAT_BINARY names a built moat.

func requireGCC(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("gcc"); err != nil {
		t.Skip("the conformance programs are built with gcc, which is not on PATH")
	}
}

// requireRunc returns runc, or skips the test when runc cannot run here.
func requireRunc(t *testing.T) *Runtime {
	t.Helper()
	requireGCC(t)
	if os.Geteuid() != 0 {
		t.Skip("running containers with runc needs root")
	}
	rt, err := ResolveRuntime("runc", "", nil)
	if err != nil {
		t.Skipf("runc not found: %v", err)
	}
	return rt
}

// prepare builds an Env that the test's cleanup closes.
func prepare(t *testing.T, opts Options) *Env {
	t.Helper()
	e, err := Prepare(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := e.Close(); err != nil {
			t.Error(err)
		}
	})
	return e
}

// expectAllPass fails the test for every result that did not pass, and if
// the results do not name every wanted program.
func expectAllPass(t *testing.T, results []Result, want int) {
	t.Helper()
	if len(results) != want {
		t.Errorf("got %d results, want %d", len(results), want)
	}
	for _, r := range results {
		if r.Status != Pass {
			t.Errorf("%s", r.Line())
		}
	}
}

func TestSuiteNative(t *testing.T) {
	requireGCC(t)
	e := prepare(t, Options{})
	results, err := e.RunPrograms(context.Background(), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	progs, err := Programs()
	if err != nil {
		t.Fatal(err)
	}
	expectAllPass(t, results, len(progs))
}

func TestSuiteRunc(t *testing.T) {
	runc := requireRunc(t)
	e := prepare(t, Options{})
	ctx := context.Background()
	results, err := e.RunPrograms(ctx, runc, nil)
	if err != nil {
		t.Fatal(err)
	}
	expectAllPass(t, results, e.RunCount())
	real, err := e.CompareRealPrograms(ctx, runc, runc, nil)
	if err != nil {
		t.Fatal(err)
	}
	expectAllPass(t, real, len(realChecks))
}

func TestSuiteMoat(t *testing.T) {
	bin := os.Getenv("MOAT_BINARY")
	if bin == "" {
		t.Skip("MOAT_BINARY does not name a built moat binary")
	}
	requireGCC(t)
	// $MOAT_FLAGS are global flags for every moat command (make test
	// runs the suite once per platform with --platform).
	moat, err := ResolveRuntime(bin, "", strings.Fields(os.Getenv("MOAT_FLAGS")))
	if err != nil {
		t.Fatal(err)
	}
	e := prepare(t, Options{})
	ctx := context.Background()
	results, err := e.RunPrograms(ctx, moat, nil)
	if err != nil {
		t.Fatal(err)
	}
	expectAllPass(t, results, e.RunCount())

	t.Run("real", func(t *testing.T) {
		runc := requireRunc(t)
		real, err := e.CompareRealPrograms(ctx, moat, runc, nil)
		if err != nil {
			t.Fatal(err)
		}
		expectAllPass(t, real, len(realChecks))
	})
}
