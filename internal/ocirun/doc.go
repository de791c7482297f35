// Package ocirun drives OCI runtimes through the command line runc defined,
// `RUNTIME --root STATE [FLAGS] SUBCOMMAND ...`: it finds a runtime's binary,
// writes a bundle's config.json, runs a container with its output captured
// and a time limit, issues the lifecycle commands (create, state, kill,
// delete, list), and clears a runtime's state directory of the containers
// and mounts left in it. bench, conformance and the integration tests drive
// runc, runsc and moat through it; runsc's flags are defined here and
// nowhere else.
//
// It is mechanism only. What to run, how to time it, when to delete a
// container and what an outcome means stay with its callers: it never
// deletes a container it was not asked to, and never judges an exit status.
// It must never leave a process of its own behind: a run that outlives its
// time limit or its context is stopped, and what the stop leaves is killed
// with its whole process group before Run returns. A process it starts
// gets its stdio and none of the descriptors its caller inherited.
package ocirun
