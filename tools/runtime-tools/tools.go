//go:build tools

// Package tools pins the OCI runtime-tools validation suite, whose
// programs `make oci-validation` builds from this module (the Go module
// proxy serves v0.9.0 alone; its runtime-spec, selinux and cli are held
// at versions it builds with).
package tools

import (
	_ "github.com/opencontainers/runtime-tools/cmd/runtimetest"
	_ "github.com/opencontainers/runtime-tools/validation/util"
)
