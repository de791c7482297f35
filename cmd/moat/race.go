//go:build race

package main

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// A moat built with -race (make race-integration; moat itself is built
// without cgo) links the C library, which the race detector needs, and
// glibc registers an rseq area on every thread it starts: a stub forked
// from such a thread dies once it unmaps the sentry's memory, and systrap
// refuses to fork one. The sentry and the gofer are started with an empty
// environment, so each execs itself once more, before it does anything,
// with glibc told not to register rseq, and with the race detector's
// reports going to files in raceLogDir (the sentry's stderr is the
// guest's) and no second's sleep at exit. cmd/moat's own tests, whose
// fake sentry and gofer check that they get no environment, are left alone.
const (
	noRseq     = "GLIBC_TUNABLES=glibc.pthread.rseq=0"
	raceLogDir = "/tmp/moat-race"
)

func init() {
	if testing.Testing() || len(os.Args) < 2 || (os.Args[1] != "boot" && os.Args[1] != "gofer") {
		return
	}
	for _, kv := range os.Environ() {
		if kv == noRseq {
			return // this is the second start
		}
	}
	os.MkdirAll(raceLogDir, 0o777)
	env := append(os.Environ(), noRseq,
		"GORACE=atexit_sleep_ms=0 log_path="+filepath.Join(raceLogDir, os.Args[1]))
	err := syscall.Exec(selfExe, os.Args, env)
	os.Stderr.WriteString("moat (race build): re-exec with rseq off: " + err.Error() + "\n")
	os.Exit(1)
}
