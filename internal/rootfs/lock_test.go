package rootfs

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"
)

// TestLockFileExcludes: a second taker waits for the first, and gives up
// when its context ends.
func TestLockFileExcludes(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.lock")
	unlock, err := lockFile(context.Background(), path)
	must(t, err)

	ctx, cancel := context.WithTimeout(context.Background(), 3*lockPoll)
	defer cancel()
	if _, err := lockFile(ctx, path); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("second lock while held: %v, want a deadline error", err)
	}

	got := make(chan error)
	go func() {
		unlock2, err := lockFile(context.Background(), path)
		if err == nil {
			unlock2()
		}
		got <- err
	}()
	time.Sleep(2 * lockPoll)
	unlock()
	select {
	case err := <-got:
		must(t, err)
	case <-time.After(5 * time.Second):
		t.Fatal("the waiter did not get the lock once it was released")
	}
}
