// Package confine shuts the sentry and the gofer in, each before it reads a
// byte the guest or the image controls: new namespaces (user, pid, mount,
// network, IPC, UTS, cgroup), a root of their own (an empty read-only one
// for the sentry, the container's tree for the gofer), no capabilities
// beyond those a gofer's file operations need, no_new_privs, and a seccomp
// allowlist on every thread. A host call outside the allowlist kills the
// process (SECCOMP_RET_KILL_PROCESS), which the CLI reports as such.
//
// The allowlists (sentry.go, gofer.go) are the documented ones:
// docs/security.md is generated from them, with the reason for each call.
//
// It must never loosen a confinement once made: every step is one way.
package confine
