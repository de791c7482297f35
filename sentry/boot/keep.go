package boot

import (
	"bufio"
	"fmt"
	"os"
	"time"

	"github.com/moat-sandbox/moat/internal/bundle"
	"github.com/moat-sandbox/moat/internal/control"
	"github.com/moat-sandbox/moat/sentry/fs/overlay"
	"github.com/moat-sandbox/moat/sentry/vfs"
)

// A kept upper layer (moat sandbox --keep) arrives and leaves through
// descriptors the CLI opened: the sentry opens no host file. The CLI
// checks the saved stream's end mark before it takes it (overlay.Check),
// so a sentry that dies while saving leaves the previous state in place.

// keepSettle bounds how long a sentry whose guest is done waits for the
// last guest tasks to leave it (a task killed in a system call finishes
// that call) before it saves the upper layer.
const keepSettle = 2 * time.Second

// keepBuffer gathers the tar stream's 512-byte headers into fewer reads
// and writes of the host file.
const keepBuffer = 64 << 10

// loadKept loads the kept state into the overlay at root, then hides
// keep's directories.
func loadKept(root vfs.Path, writes string, keep *control.Keep) error {
	if writes != bundle.WritesOverlay {
		return fmt.Errorf("keep: the root is not an overlay (rootfs writes %q)", writes)
	}
	if keep.Load {
		f := os.NewFile(control.BootKeepLoadFD, "kept state")
		err := overlay.Load(root.Dentry, bufio.NewReaderSize(f, keepBuffer))
		f.Close()
		if err != nil {
			return fmt.Errorf("load the kept sandbox: %w", err)
		}
	}
	for _, d := range keep.Hide {
		if err := overlay.Hide(root.Dentry, d.Path, d.Mode, d.UID, d.GID); err != nil {
			return fmt.Errorf("keep: %w", err)
		}
	}
	return nil
}

// saveKept writes the upper layer to control.BootKeepSaveFD, once the
// guest is done. A failure is logged; the CLI sees it as a stream without
// its end mark.
func (s *Sandbox) saveKept() {
	for deadline := time.Now().Add(keepSettle); s.Kernel.NumTasks() > 0 && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
	f := os.NewFile(control.BootKeepSaveFD, "kept state")
	defer f.Close()
	w := bufio.NewWriterSize(f, keepBuffer)
	var hidden []string
	for _, d := range s.keep.Hide {
		hidden = append(hidden, d.Path)
	}
	err := overlay.Save(s.kept, w, hidden)
	if err == nil {
		err = w.Flush()
	}
	if err != nil {
		s.log("save the kept sandbox: %v", err)
	}
}
