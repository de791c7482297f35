package bench

import (
	"context"
	"fmt"
	"time"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/moat-sandbox/moat/internal/ocirun"
)

// exec starts container id from spec (its process holds it up), times one
// `exec ID argv` into it, and deletes it; natively it times argv itself.
// Only the exec is timed: create, start and delete are not.
func (in *instance) exec(ctx context.Context, id string, spec *specs.Spec, argv []string, timeout time.Duration, out *ocirun.Output) (time.Duration, error) {
	if in.Kind == KindNative {
		native := *spec
		p := *spec.Process
		p.Args = argv
		native.Process = &p
		return in.run(ctx, id, &native, timeout, out)
	}
	if err := out.Reset(); err != nil {
		return 0, err
	}
	defer in.forceDelete(id)
	if _, err := in.createStart(ctx, id, out); err != nil {
		return 0, err
	}
	x := ocirun.Run(ctx, in.oci.Command(append([]string{"exec", id}, argv...)...), out.Stdio(), ocirun.Limits{Timeout: timeout})
	if x.StartErr != nil {
		return 0, x.StartErr
	}
	if ctx.Err() != nil {
		return 0, ctx.Err()
	}
	if err := x.Err(); err != nil {
		return 0, fmt.Errorf("exec: %v%s", err, tail(out.Stderr))
	}
	return x.Took, nil
}

// createStart creates and starts container id from the instance's bundle
// and returns how long the two took.
func (in *instance) createStart(ctx context.Context, id string, out *ocirun.Output) (time.Duration, error) {
	t0 := time.Now()
	if err := in.oci.Create(in.bundle, id, out.Stdio()); err != nil {
		return 0, err
	}
	start := ocirun.Run(ctx, in.oci.Command("start", id), out.Stdio(), ocirun.Limits{Timeout: ocirun.CommandTimeout})
	if err := start.Err(); err != nil || start.StartErr != nil {
		return 0, fmt.Errorf("start: %v%v%s", err, start.StartErr, tail(out.Stderr))
	}
	return time.Since(t0), nil
}
