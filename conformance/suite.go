package conformance

import (
	"context"
)

// RunPrograms runs every program natively and, if rt is not nil, then in
// rt, calling progress (if not nil) with each result as it is known. Without
// a runtime a program passes if it passes natively; with one, it must pass
// in the runtime, and failing natively makes it BROKEN. When ctx is
// cancelled the running program is stopped (its container killed and
// deleted) and RunPrograms returns the results so far with ctx's error.
func (e *Env) RunPrograms(ctx context.Context, rt *Runtime, progress func(Result)) ([]Result, error) {
	var results []Result
	for _, p := range e.Programs {
		native := e.runNative(ctx, p)
		if ctx.Err() != nil {
			return results, ctx.Err()
		}
		places := []string{PlaceTmpfs}
		if rt != nil {
			places = p.Runs()
		}
		for _, place := range places {
			r := Result{Name: p.RunName(place), Covers: p.Covers, Native: &native}
			if rt != nil {
				args := []string{"/conformance/bin/" + p.binaryName(), "--sandbox", Hostname}
				in := e.runProgram(ctx, rt, args, &p, place)
				if ctx.Err() != nil {
					return results, ctx.Err()
				}
				r.Runtime = &in
			}
			r.Status, r.Reason = e.verdict(r.Native, r.Runtime)
			results = append(results, r)
			if progress != nil {
				progress(r)
			}
		}
	}
	return results, nil
}

// RunCount is how many results RunPrograms gives with a runtime.
func (e *Env) RunCount() int {
	n := 0
	for _, p := range e.Programs {
		n += len(p.Runs())
	}
	return n
}

// verdict judges a program from its native run and, if there was one, its
// run in the runtime.
func (e *Env) verdict(native, runtime *Outcome) (Status, string) {
	switch {
	case runtime == nil && native.ok():
		return Pass, ""
	case runtime == nil:
		return Fail, native.failure(e.timeout)
	case !native.ok():
		return Broken, "fails natively: " + native.failure(e.timeout)
	case runtime.ok():
		return Pass, ""
	default:
		return Fail, runtime.failure(e.timeout)
	}
}
