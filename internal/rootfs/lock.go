package rootfs

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// lockPoll is how often a waiting caller retries the lock. A build takes
// minutes, so a fraction of a second is no loss.
const lockPoll = 200 * time.Millisecond

// lockFile takes an exclusive flock on path, waiting while another process
// (or another caller in this one: flock locks belong to the open file)
// holds it, until ctx ends. The lock falls with the process, so a build
// that is killed cannot leave the cache locked.
func lockFile(ctx context.Context, path string) (unlock func(), err error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	for {
		err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		if err == nil {
			// Closing the file releases the lock.
			return func() { f.Close() }, nil
		}
		if !errors.Is(err, unix.EWOULDBLOCK) {
			f.Close()
			return nil, fmt.Errorf("lock %s: %w", path, err)
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, fmt.Errorf("waiting for the build that holds %s: %w", path, context.Cause(ctx))
		case <-time.After(lockPoll):
		}
	}
}
