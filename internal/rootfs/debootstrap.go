package rootfs

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
)

// debootstrapPath is where Debian installs it; the lookup falls back to it
// because a non-login root shell may lack /usr/sbin in PATH.
const debootstrapPath = "/usr/sbin/debootstrap"

// findDebootstrap returns debootstrap's path, installing Debian's package
// first when it is missing, as `make deps` does for the other tools: a
// fresh CI machine has apt but not debootstrap.
func findDebootstrap(ctx context.Context) (string, error) {
	if p, err := exec.LookPath("debootstrap"); err == nil {
		return p, nil
	}
	if _, err := os.Stat(debootstrapPath); err == nil {
		return debootstrapPath, nil
	}
	install := []string{"install", "-y", "-q", "--no-install-recommends", "debootstrap"}
	if err := aptGet(ctx, install...); err != nil {
		// The package lists of a fresh machine may be stale or absent.
		if err := aptGet(ctx, "update", "-q"); err != nil {
			return "", err
		}
		if err := aptGet(ctx, install...); err != nil {
			return "", err
		}
	}
	if _, err := os.Stat(debootstrapPath); err != nil {
		return "", fmt.Errorf("apt-get installed debootstrap, but: %w", err)
	}
	return debootstrapPath, nil
}

func aptGet(ctx context.Context, args ...string) error {
	cmd := exec.CommandContext(ctx, "apt-get", args...)
	cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("apt-get %s: %v\n%s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}
