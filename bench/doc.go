// Package bench puts OCI runtimes side by side on the same workloads. It
// builds one bundle (a read-only busybox rootfs plus the static C programs of
// workloads/), runs every selected runtime on it in interleaved order, and
// reports medians, ranges and ratios to a baseline runtime (runc) as JSON,
// Markdown and an SVG chart.
//
// It drives a runtime only through the command line runc defined
// (`RUNTIME --root DIR [FLAGS] run --bundle DIR ID`, with internal/ocirun,
// as conformance and the integration tests do), so what it measures is
// what podman or containerd would get, and moat is held to the same interface
// as runc and runsc. The runtimes are data (runtimes.json), the workloads a
// table (workload.go).
//
// It must never leave anything behind: every container it starts is deleted,
// and its bundles and state directories are removed, also when interrupted.
package bench
