package main

import "errors"

// errNoCheckpoint is checkpoint's and restore's answer: the sentry cannot
// save a sandbox's state yet, and a command that claimed to would lose it.
var errNoCheckpoint = errors.New("checkpoint and restore are not supported by moat")

var checkpointCommand = &command{
	name:    "checkpoint",
	args:    "<container-id>",
	minArgs: 1, maxArgs: 1,
	summary: "not supported: save a running container's state",
	setup:   noCheckpoint,
}

var restoreCommand = &command{
	name:    "restore",
	args:    "<container-id>",
	minArgs: 1, maxArgs: 1,
	summary: "not supported: start a container from a checkpoint",
	setup:   noCheckpoint,
}

// noCheckpoint accepts runc's options of both commands, so that the
// answer is the refusal whatever is asked, and refuses.
func noCheckpoint(o *options) func(*globalOptions, []string) error {
	var s string
	var b bool
	for _, name := range []string{"image-path", "work-path", "parent-path", "page-server", "manage-cgroups-mode",
		"empty-ns", "auto-dedup", "lazy-pages", "status-fd", "bundle,b", "console-socket", "pid-file"} {
		o.String(&s, name, "VALUE", "", "accepted for compatibility with runc")
	}
	for _, name := range []string{"leave-running", "tcp-established", "ext-unix-sk", "shell-job", "file-locks",
		"pre-dump", "detach,d", "no-subreaper", "no-pivot"} {
		o.Bool(&b, name, "accepted for compatibility with runc")
	}
	return func(*globalOptions, []string) error { return errNoCheckpoint }
}
