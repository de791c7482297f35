package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"
)

// podmanTimeout bounds one podman command: a wedged store fails the
// server's start, not hangs it.
const podmanTimeout = time.Minute

// imageTemplates are the templates moat serve made from images of
// podman's store: each image's root file system stays mounted (podman
// image mount) while the server runs, and release unmounts them.
type imageTemplates struct {
	refs []string // mounted, in order
}

// mount mounts the image ref names and returns the directory of its root
// file system: podman's own copy, which moat serve never writes (the
// sandboxes write through overlays of their own).
func (it *imageTemplates) mount(ref string) (string, error) {
	out, err := podman("image", "mount", ref)
	if err != nil {
		return "", err
	}
	dir := strings.TrimSpace(out)
	it.refs = append(it.refs, ref)
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return "", fmt.Errorf("podman image mount %s gave %q, not a directory", ref, dir)
	}
	return dir, nil
}

// env returns the environment image ref's config sets (its Env: KEY=VALUE
// entries), the base of every process's in its sandboxes, as an engine
// gives a container of the image.
func (it *imageTemplates) env(ref string) ([]string, error) {
	out, err := podman("image", "inspect", "--format", "{{json .Config.Env}}", ref)
	if err != nil {
		return nil, err
	}
	var env []string
	if err := json.Unmarshal([]byte(strings.TrimSpace(out)), &env); err != nil {
		return nil, fmt.Errorf("podman image inspect %s: its Env %q: %w", ref, strings.TrimSpace(out), err)
	}
	return env, nil
}

// release unmounts every image mounted; podman counts the mounts of an
// image, so one that others mounted too stays mounted for them.
func (it *imageTemplates) release() error {
	var err error
	for _, ref := range it.refs {
		if _, uerr := podman("image", "unmount", ref); uerr != nil {
			err = errors.Join(err, uerr)
		}
	}
	it.refs = nil
	return err
}

// podman runs podman with args and returns its standard output, or an
// error holding the last line it wrote to stderr.
func podman(args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), podmanTimeout)
	defer cancel()
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, "podman", args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(stderr.String())
		if i := strings.LastIndexByte(msg, '\n'); i >= 0 {
			msg = msg[i+1:]
		}
		if msg != "" {
			return "", fmt.Errorf("podman %s: %s", strings.Join(args, " "), msg)
		}
		return "", fmt.Errorf("podman %s: %w", strings.Join(args, " "), err)
	}
	return stdout.String(), nil
}
