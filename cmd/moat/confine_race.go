//go:build race

package main

// confineFully is off in a race build (make race-integration): it links
// the C library, whose threads AllThreadsSyscall cannot reach, so no
// credential change would cover every thread; and the detector opens its
// report files (raceLogDir) when it first reports, which a changed root
// or a filter would forbid. The sentry and the gofer keep their
// namespaces and nothing more: a race build is for finding races, never
// for running a sandbox that matters.
const confineFully = false
