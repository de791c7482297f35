// Package conformance measures a sandbox runtime against Linux.
//
// Its C programs (programs/*.c, one per system call family and topic) each
// assert real Linux behaviour and exit non-zero on any mismatch, printing one
// "file:line: expected ..., got ..." line per failed check. The package
// builds them static with gcc, runs every one natively and then inside any
// runc-compatible runtime (runc, runsc, moat, or a binary given by path)
// from one OCI bundle, and compares a few real programs (busybox) between
// the runtime and a reference runtime. A program that fails natively is the
// suite's own bug and is reported as BROKEN.
//
// The package drives runtimes only through their command line (with
// internal/ocirun, as bench and the integration tests do) and must never
// leave anything behind: every container it starts is killed and deleted,
// and its bundle and state root are removed, also when the caller's context
// is cancelled midway.
package conformance
