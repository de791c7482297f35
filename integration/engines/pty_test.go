package engines

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// openPTY opens a host pseudo-terminal: a person's terminal, for `-it`.
func openPTY(t *testing.T) (master, replica *os.File) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	fd := int(m.Fd())
	n, err := unix.IoctlGetUint32(fd, unix.TIOCGPTN)
	if err == nil {
		err = unix.IoctlSetPointerInt(fd, unix.TIOCSPTLCK, 0)
	}
	if err != nil {
		m.Close()
		t.Fatal(err)
	}
	r, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		m.Close()
		t.Fatal(err)
	}
	unix.IoctlSetWinsize(fd, unix.TIOCSWINSZ, &unix.Winsize{Row: 24, Col: 80})
	return m, r
}

// interact runs name with args on a new terminal, as a person at it
// would: it waits for prompt, types input, and returns everything the
// terminal showed and the exit status.
func interact(t *testing.T, prompt, input string, name string, args ...string) (string, int) {
	t.Helper()
	master, replica := openPTY(t)
	defer master.Close()
	ctx, cancel := context.WithTimeout(context.Background(), commandTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = replica, replica, replica
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	if err := cmd.Start(); err != nil {
		replica.Close()
		t.Fatal(err)
	}
	replica.Close()
	var shown bytes.Buffer
	done := make(chan struct{})
	typed := make(chan struct{})
	go func() {
		defer close(done)
		buf := make([]byte, 4096)
		sent := false
		for {
			n, err := master.Read(buf)
			shown.Write(buf[:max(n, 0)])
			if !sent && bytes.Contains(shown.Bytes(), []byte(prompt)) {
				sent = true
				close(typed)
			}
			if err != nil {
				return
			}
		}
	}()
	select {
	case <-typed:
		io.WriteString(master, input)
	case <-time.After(30 * time.Second):
		t.Errorf("%s %q: no %q on the terminal within 30s", name, args, prompt)
	}
	err := cmd.Wait()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
	}
	var exit *exec.ExitError
	code := 0
	if errors.As(err, &exit) {
		code = exit.ExitCode()
	} else if err != nil {
		t.Fatalf("%s %q: %v", name, args, err)
	}
	return shown.String(), code
}
