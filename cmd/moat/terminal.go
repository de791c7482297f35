package main

import (
	"io"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// outputDrainTimeout bounds the wait for a container's last output once its
// sentry has exited: a leftover holder of the terminal must not hang `run`.
const outputDrainTimeout = 2 * time.Second

// terminalSession joins the CLI's own stdin and stdout to a container's
// terminal while `moat run` waits in the foreground, as runc does.
type terminalSession struct {
	master *os.File
	saved  *unix.Termios // the CLI terminal's settings before raw mode; nil if stdin is no terminal
	output chan struct{} // closed once the container's output is copied to its end
}

// attachTerminal puts the CLI's terminal, if it has one, in raw mode, so
// that every key reaches the container's terminal (^C included), gives the
// container's terminal the same size and starts copying both ways.
func attachTerminal(master *os.File) *terminalSession {
	t := &terminalSession{master: master, output: make(chan struct{})}
	if saved, err := unix.IoctlGetTermios(int(os.Stdin.Fd()), unix.TCGETS); err == nil {
		raw := *saved
		makeRaw(&raw)
		if unix.IoctlSetTermios(int(os.Stdin.Fd()), unix.TCSETS, &raw) == nil {
			t.saved = saved
		}
		t.resize()
	}
	// The input copy ends with stdin, or with the CLI: nothing waits for it.
	go io.Copy(master, os.Stdin)
	go func() {
		// Ends with EIO once no process holds the replica end.
		io.Copy(os.Stdout, master)
		close(t.output)
	}()
	return t
}

// resize gives the container's terminal the size of the CLI's.
func (t *terminalSession) resize() {
	if ws, err := unix.IoctlGetWinsize(int(os.Stdin.Fd()), unix.TIOCGWINSZ); err == nil {
		unix.IoctlSetWinsize(int(t.master.Fd()), unix.TIOCSWINSZ, ws)
	}
}

// detach waits a little for the container's last output, then gives the
// CLI's terminal back its settings.
func (t *terminalSession) detach() {
	select {
	case <-t.output:
	case <-time.After(outputDrainTimeout):
	}
	if t.saved != nil {
		unix.IoctlSetTermios(int(os.Stdin.Fd()), unix.TCSETS, t.saved)
	}
	t.master.Close()
}

// makeRaw clears what a terminal would otherwise interpret: line editing,
// echo, signal keys and output processing (cfmakeraw(3)).
func makeRaw(t *unix.Termios) {
	t.Iflag &^= unix.IGNBRK | unix.BRKINT | unix.PARMRK | unix.ISTRIP | unix.INLCR | unix.IGNCR | unix.ICRNL | unix.IXON
	t.Oflag &^= unix.OPOST
	t.Lflag &^= unix.ECHO | unix.ECHONL | unix.ICANON | unix.ISIG | unix.IEXTEN
	t.Cflag &^= unix.CSIZE | unix.PARENB
	t.Cflag |= unix.CS8
	t.Cc[unix.VMIN] = 1
	t.Cc[unix.VTIME] = 0
}
