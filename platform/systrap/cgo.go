//go:build cgo

package systrap

// builtWithCgo: a sentry linked with the C library cannot fork stubs. Every
// thread of such a process has an rseq area registered by the C library, a
// forked stub inherits the registration, and when the stub unmaps the
// sentry's memory the kernel kills it on its next return to user space.
const builtWithCgo = true
