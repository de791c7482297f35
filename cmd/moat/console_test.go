package main

import (
	"bufio"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

func TestConsoleSocketReceivesTheTerminal(t *testing.T) {
	e := newEnv(t)
	socketPath := filepath.Join(t.TempDir(), "console.sock")
	listener, err := net.ListenUnix("unix", &net.UnixAddr{Name: socketPath, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	defer listener.Close()
	type received struct {
		name   string
		master *os.File
		err    error
	}
	got := make(chan received, 1)
	go func() {
		conn, err := listener.AcceptUnix()
		if err != nil {
			got <- received{err: err}
			return
		}
		defer conn.Close()
		buf, oob := make([]byte, 64), make([]byte, unix.CmsgSpace(4))
		n, oobn, _, _, err := conn.ReadMsgUnix(buf, oob)
		if err != nil {
			got <- received{err: err}
			return
		}
		msgs, err := unix.ParseSocketControlMessage(oob[:oobn])
		if err != nil || len(msgs) != 1 {
			got <- received{err: err}
			return
		}
		fds, err := unix.ParseUnixRights(&msgs[0])
		if err != nil || len(fds) != 1 {
			got <- received{err: err}
			return
		}
		got <- received{name: string(buf[:n]), master: os.NewFile(uintptr(fds[0]), "master")}
	}()

	bundle := writeBundleConfig(t, strings.Replace(bundleConfig("echo", "hello"), `"cwd"`, `"terminal": true, "cwd"`, 1))
	e.ok("create", "--console-socket", socketPath, "-b", bundle, "c1")
	r := <-got
	if r.err != nil {
		t.Fatal(r.err)
	}
	defer r.master.Close()
	// runc sends the master's name, which is that of the device it came from.
	if r.name != "/dev/ptmx" {
		t.Errorf("console message names %q, want /dev/ptmx", r.name)
	}
	if _, err := unix.IoctlGetUint32(int(r.master.Fd()), unix.TIOCGPTN); err != nil {
		t.Errorf("received descriptor is not a pty master: %v", err)
	}

	// The fake sentry checked that its stdio is a terminal; what it prints
	// comes out of the master.
	e.ok("start", "c1")
	line, err := bufio.NewReader(r.master).ReadString('\n')
	if err != nil || strings.TrimRight(line, "\r\n") != "hello" {
		t.Errorf("read from the master: %q, %v; want hello", line, err)
	}
}
