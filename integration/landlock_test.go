package integration

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"testing"
	"time"
)

// goLandlock is the Go library whose own tests restrict themselves with
// Landlock (rulesets, file and network rules, scopes, threads) and check
// what is then denied: a program written elsewhere, run unchanged.
const goLandlock = "github.com/landlock-lsm/go-landlock@v0.11.2"

// goTestResult matches a test's verdict in `go test -test.v` output.
var goTestResult = regexp.MustCompile(`(?m)^--- (PASS|FAIL|SKIP): (\S+)`)

// goTestResults returns each test's verdict in out.
func goTestResults(out string) map[string]string {
	res := map[string]string{}
	for _, m := range goTestResult.FindAllStringSubmatch(out, -1) {
		res[m[2]] = m[1]
	}
	return res
}

func TestGoLandlockTestsPassInASandboxAsOnTheHost(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("needs the go command to build go-landlock's tests")
	}
	e := newLocalEnv(t, 0, 0)
	// The library's test binary, built static in a module of its own.
	mod := t.TempDir()
	must(t, os.WriteFile(filepath.Join(mod, "go.mod"), []byte("module goll\n\ngo 1.24\n"), 0o644))
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	bin := filepath.Join(e.dir, "landlock.test")
	for _, args := range [][]string{{"get", goLandlock}, {"test", "-c", "-o", bin, "github.com/landlock-lsm/go-landlock/landlock"}} {
		cmd := exec.CommandContext(ctx, "go", args...)
		cmd.Dir = mod
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOFLAGS=-mod=mod")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Skipf("go %v (the module proxy must be reachable): %v\n%s", args, err, out)
		}
	}
	native, err := exec.CommandContext(ctx, bin, "-test.v").CombinedOutput()
	if err != nil {
		t.Skipf("go-landlock's tests fail on the host itself (its kernel's Landlock): %v\n%s", err, native)
	}
	want := goTestResults(string(native))
	if len(want) == 0 {
		t.Fatalf("no test ran natively:\n%s", native)
	}
	r := e.run("./landlock.test", "-test.v")
	got := goTestResults(r.stdout + r.stderr)
	if r.code != 0 || !reflect.DeepEqual(got, want) {
		var diff []string
		for name, v := range want {
			if got[name] != v {
				diff = append(diff, name+": "+v+" natively, "+got[name]+" in moat")
			}
		}
		sort.Strings(diff)
		t.Errorf("go-landlock's tests exited %d in moat, differing from the host's in %v\n%s%s", r.code, diff, r.stdout, r.stderr)
	}
	t.Logf("%d tests, the same verdicts natively and in moat", len(want))
}
