// Package engines runs moat under the container engines that drive runc:
// podman, Docker and containerd, each installed from Debian's packages by
// the tests themselves on first use (a test skips, saying why, when its
// package cannot be installed). Every case runs with runc too, where runc
// works here, and the two outputs are compared. Images are made locally
// (a tarred busybox root imported into the engine) and no engine is ever
// allowed to pull. The suite is slow and bounded: every engine command has
// a deadline, and `make engines` runs the package alone.
package engines
