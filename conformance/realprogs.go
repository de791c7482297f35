package conformance

import (
	"context"
	"fmt"
	"sort"
	"strings"
)

// realCheck is a busybox command run in the runtime under test and in a
// reference runtime; exit status, stdout and stderr must agree.
type realCheck struct {
	name     string
	args     []string            // busybox applet and arguments
	wantExit int                 // the reference must exit with this status too
	filter   func(string) string // drops what may differ between kernels
}

var realChecks = []realCheck{
	{name: "echo", args: []string{"echo", "hello", "conformance"}},
	{name: "cat", args: []string{"cat", "/" + dataDir + "/hello.txt"}},
	{name: "ls", args: []string{"ls", "-la", "/etc"}},
	{name: "wc", args: []string{"wc", "/" + dataDir + "/blob.bin"}},
	{name: "sha256sum", args: []string{"sha256sum", "/" + dataDir + "/blob.bin"}},
	{name: "head", args: []string{"head", "-n", "1", "/etc/passwd"}},
	{name: "uname", args: []string{"uname", "-a"}, filter: unameStable},
	{name: "id", args: []string{"id"}},
	{name: "env", args: []string{"env"}, filter: sortLines},
	{name: "sleep", args: []string{"sleep", "0.1"}},
	{name: "exit", args: []string{"sh", "-c", "exit 3"}, wantExit: 3},
}

// unameStable keeps the fields of `uname -a` that a sandbox must get right
// (kernel name, hostname, machine, operating system) and drops the kernel
// release, version and build date, which a user-space kernel reports as it
// likes.
func unameStable(out string) string {
	f := strings.Fields(out)
	if len(f) < 4 {
		return out
	}
	return strings.Join([]string{f[0], f[1], f[len(f)-2], f[len(f)-1]}, " ")
}

// sortLines puts lines in order, for output whose order carries no
// meaning: runsc, for one, reorders the environment.
func sortLines(out string) string {
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	sort.Strings(lines)
	return strings.Join(lines, "\n") + "\n"
}

// CompareRealPrograms runs each busybox check in target and in reference
// and compares them. The checks are skipped when reference is nil or the
// rootfs has no busybox. Cancellation works as for RunPrograms.
func (e *Env) CompareRealPrograms(ctx context.Context, target, reference *Runtime, progress func(Result)) ([]Result, error) {
	var results []Result
	for _, c := range realChecks {
		name := "real/" + c.name
		if !e.selected(name) {
			continue
		}
		r := Result{Name: name, Args: c.args}
		switch {
		case reference == nil:
			r.Status, r.Reason = Skip, "no reference runtime"
		case !e.busybox:
			r.Status, r.Reason = Skip, "no busybox in the rootfs"
		default:
			args := append([]string{"/bin/busybox"}, c.args...)
			got := e.runContainer(ctx, target, containerSpec(args))
			if ctx.Err() != nil {
				return results, ctx.Err()
			}
			want := e.runContainer(ctx, reference, containerSpec(args))
			if ctx.Err() != nil {
				return results, ctx.Err()
			}
			r.Runtime, r.Reference = &got, &want
			r.Status, r.Reason = Pass, ""
			if reason := e.compareReal(c, &got, &want, reference.Name); reason != "" {
				r.Status, r.Reason = Fail, reason
			}
		}
		results = append(results, r)
		if progress != nil {
			progress(r)
		}
	}
	return results, nil
}

// compareReal returns why got does not match want, the outcome in the
// runtime named refName, or "" if it does.
func (e *Env) compareReal(c realCheck, got, want *Outcome, refName string) string {
	if want.Error != "" || want.TimedOut || want.ExitCode != c.wantExit {
		return fmt.Sprintf("reference %s did not exit %d: %s", refName, c.wantExit, want.failure(e.timeout))
	}
	if got.Error != "" || got.TimedOut || got.ExitCode != want.ExitCode {
		return fmt.Sprintf("exited %d, %s exited %d: %s", got.ExitCode, refName, want.ExitCode, got.failure(e.timeout))
	}
	gotOut, wantOut := got.Stdout, want.Stdout
	if c.filter != nil {
		gotOut, wantOut = c.filter(gotOut), c.filter(wantOut)
	}
	if d := firstDifference(gotOut, wantOut); d != "" {
		return fmt.Sprintf("stdout differs from %s's: %s", refName, d)
	}
	if d := firstDifference(got.Stderr, want.Stderr); d != "" {
		return fmt.Sprintf("stderr differs from %s's: %s", refName, d)
	}
	return ""
}

// firstDifference describes the first line where got and want differ, or
// returns "" if they are equal.
func firstDifference(got, want string) string {
	if got == want {
		return ""
	}
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	for i := range max(len(g), len(w)) {
		switch {
		case i >= len(w):
			return fmt.Sprintf("extra line %d %q", i+1, g[i])
		case i >= len(g):
			return fmt.Sprintf("line %d %q missing", i+1, w[i])
		case g[i] != w[i]:
			return fmt.Sprintf("line %d is %q, want %q", i+1, g[i], w[i])
		}
	}
	return "" // unreachable: unequal strings differ in some line
}
