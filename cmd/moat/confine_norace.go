//go:build !race

package main

// confineFully: the sentry and the gofer drop their privileges, change
// their root and install their seccomp filters (internal/confine).
const confineFully = true
