package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"
)

// logger writes the --log file in runc's formats, so that tools which read
// runc's log (containerd takes the last error from it) read moat's:
//
//	text: time="2006-01-02T15:04:05Z" level=error msg="container does not exist"
//	json: {"level":"error","msg":"container does not exist","time":"2006-01-02T15:04:05Z"}
//
// Without --log, errors go to stderr only and debug lines to stderr.
type logger struct {
	file  *os.File // nil without --log
	path  string   // absolute, for the sentry, which runs elsewhere; empty without --log
	json  bool
	debug bool
}

func openLog(path, format string, debug bool) (*logger, error) {
	l := &logger{debug: debug}
	switch format {
	case "text":
	case "json":
		l.json = true
	default:
		return nil, fmt.Errorf("invalid log-format: %s (want text or json)", format)
	}
	if path == "" {
		return l, nil
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("open log: %w", err)
	}
	f, err := os.OpenFile(abs, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open log: %w", err)
	}
	l.file, l.path = f, abs
	return l, nil
}

// inheritedLog is the logger of a re-executed moat (the sentry) whose --log
// file the CLI opened and handed over as fd, if path (its name) is set.
func inheritedLog(fd int, path, format string, debug bool) (*logger, error) {
	l, err := openLog("", format, debug)
	if err != nil || path == "" {
		return l, err
	}
	l.file, l.path = os.NewFile(uintptr(fd), path), path
	return l, nil
}

func (l *logger) close() {
	if l.file != nil {
		l.file.Close()
	}
}

// errorLine logs msg at level error in the --log file, if any; the caller
// prints it on stderr itself.
func (l *logger) errorLine(msg string) {
	if l != nil && l.file != nil {
		l.write(l.file, "error", msg)
	}
}

// warnf reports something the command does not fail for (a poststop
// hook that failed) on stderr, and in the --log file if any.
func (l *logger) warnf(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	if l.file != nil {
		l.write(l.file, "warning", msg)
	}
	fmt.Fprintf(os.Stderr, "moat: warning: %s\n", msg)
}

// debugf logs a debug line when --debug is on.
func (l *logger) debugf(format string, args ...any) {
	if !l.debug {
		return
	}
	w := os.Stderr
	if l.file != nil {
		w = l.file
	}
	l.write(w, "debug", fmt.Sprintf(format, args...))
}

func (l *logger) write(w *os.File, level, msg string) {
	now := time.Now().UTC().Format(time.RFC3339)
	var line []byte
	if l.json {
		line, _ = json.Marshal(struct {
			Level string `json:"level"`
			Msg   string `json:"msg"`
			Time  string `json:"time"`
		}{level, msg, now})
	} else {
		line = fmt.Appendf(nil, "time=%q level=%s msg=%s", now, level, strconv.Quote(msg))
	}
	// One write per line: the sentry and gofer append to the same file.
	w.Write(append(line, '\n'))
}
