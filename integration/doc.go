// Package integration runs real bundles through the real moat binary: the
// container lifecycle, exit statuses, what bad input leaves behind, and
// diagnostics. The conformance suite (conformance/) checks system call
// behaviour; this package checks moat as a runtime. Tests use the binary at
// $MOAT_BINARY, or build one.
package integration
