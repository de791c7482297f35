package bundle

import (
	"fmt"
	"math"
	"strconv"
)

// Where the container's writes to its root file system go, when root.readonly
// is false.
const (
	// WritesOverlay keeps them in the sandbox, in an upper layer over the
	// image, which stays as it was: the default.
	WritesOverlay = "overlay"
	// WritesHost writes them through to the bundle's rootfs, for tools that
	// expect a container's changes to persist (podman commit, a container
	// started again).
	WritesHost = "host"
)

// WritesAnnotation, in config.json's annotations, chooses WritesOverlay or
// WritesHost for one container, over the CLI's --rootfs-writes.
const WritesAnnotation = "dev.moat.rootfs-writes"

// CheckWrites reports whether w is a rootfs-writes mode.
func CheckWrites(w string) error {
	if w != WritesOverlay && w != WritesHost {
		return fmt.Errorf("%q: want %q or %q", w, WritesOverlay, WritesHost)
	}
	return nil
}

// RootfsWrites is where the container's root file system writes go: the
// annotation's choice, else def (the CLI's).
func (b *Bundle) RootfsWrites(def string) (string, error) {
	w, ok := b.Spec.Annotations[WritesAnnotation]
	if !ok {
		return def, nil
	}
	if err := CheckWrites(w); err != nil {
		return "", &Error{Bundle: b.Dir, File: ConfigName, Field: fmt.Sprintf("annotations[%q]", WritesAnnotation), Reason: err.Error()}
	}
	return w, nil
}

// OverlayMemoryAnnotation, in config.json's annotations, sets how much of
// an overlay root's upper layer (the files the container wrote) stays in
// memory, in bytes with an optional k, m or g suffix (powers of 1024);
// past it, file data moves to an unnamed file in the container's state
// directory.
const OverlayMemoryAnnotation = "dev.moat.overlay-memory"

// DefaultOverlayMemory is the upper layer's memory without the annotation:
// room for what an agent's tools write (a virtualenv, a build tree) to stay
// in memory, while a large download or archive goes to disk.
const DefaultOverlayMemory = 256 << 20

// OverlayMemory is the annotation's size, else DefaultOverlayMemory.
func (b *Bundle) OverlayMemory() (int64, error) {
	v, ok := b.Spec.Annotations[OverlayMemoryAnnotation]
	if !ok {
		return DefaultOverlayMemory, nil
	}
	n, err := parseSize(v)
	if err != nil {
		return 0, &Error{Bundle: b.Dir, File: ConfigName, Field: fmt.Sprintf("annotations[%q]", OverlayMemoryAnnotation), Reason: err.Error()}
	}
	return n, nil
}

// parseSize reads a positive byte count with an optional k, m or g suffix.
func parseSize(v string) (int64, error) {
	shift := 0
	if n := len(v); n > 0 {
		switch v[n-1] {
		case 'k', 'K':
			shift = 10
		case 'm', 'M':
			shift = 20
		case 'g', 'G':
			shift = 30
		}
		if shift != 0 {
			v = v[:n-1]
		}
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n <= 0 || n > math.MaxInt64>>shift {
		return 0, fmt.Errorf("%q: want a positive number of bytes, with an optional k, m or g suffix", v)
	}
	return n << shift, nil
}
