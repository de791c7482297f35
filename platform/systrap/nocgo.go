//go:build !cgo

package systrap

// builtWithCgo: see cgo.go.
const builtWithCgo = false
