package bundle

import "fmt"

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
