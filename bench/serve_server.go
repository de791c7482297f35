package bench

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/moat-sandbox/moat/internal/ocirun"
)

// serveProcess is one `moat serve` of a session, on a loopback port.
type serveProcess struct {
	cmd    *exec.Cmd
	state  string      // its --state
	root   ocirun.Root // where it keeps its sandboxes' moat state
	out    *serveOutput
	exited chan struct{}
	err    error // how it exited, once exited is closed
	client *e2bClient
}

// serveStop bounds how long a server has, once told to stop, to kill its
// sandboxes and exit; then it is killed and what it left swept.
const serveStop = 2 * time.Minute

// startServe starts in's binary as `moat serve` with a template of the
// session's rootfs and a pool of pool sandboxes, and waits, for at most
// timeout, until it listens. name tells its state directory from the
// session's other servers'.
func (s *session) startServe(ctx context.Context, in *instance, name string, pool int, timeout time.Duration) (*serveProcess, error) {
	state := filepath.Join(s.dir, "serve", in.Name, name)
	if err := os.MkdirAll(state, 0o700); err != nil {
		return nil, err
	}
	key := make([]byte, 16)
	rand.Read(key)
	args := slices.Concat(in.oci.Flags, []string{"serve", "--listen", "127.0.0.1:0", "--state", state,
		"--template", serveTemplate + "=" + filepath.Join(s.bundle, ocirun.Rootfs), "--pool", strconv.Itoa(pool)})
	p := &serveProcess{state: state, root: in.oci.Runtime.At(filepath.Join(state, "run")),
		out: &serveOutput{listening: make(chan string, 1)}, exited: make(chan struct{})}
	// The session's final sweep reaches this server's sandboxes too.
	in.served = append(in.served, p.root)
	p.cmd = exec.Command(in.oci.Path, args...)
	p.cmd.Env = append(os.Environ(), "MOAT_API_KEY="+hex.EncodeToString(key))
	p.cmd.Stdout, p.cmd.Stderr = p.out, p.out
	// Its own process group: a Ctrl-C at moat-bench's terminal is
	// moat-bench's to handle, which stops the server itself. A
	// moat-bench that dies takes the server with it, gracefully.
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
	// The sandboxes' processes may hold the output pipe open after the
	// server is gone.
	p.cmd.WaitDelay = 5 * time.Second
	if err := p.cmd.Start(); err != nil {
		return nil, err
	}
	go func() {
		p.err = p.cmd.Wait()
		close(p.exited)
	}()
	wait := time.NewTimer(timeout)
	defer wait.Stop()
	select {
	case addr := <-p.out.listening:
		p.client = newE2BClient("http://"+addr, hex.EncodeToString(key))
		return p, nil
	case <-p.exited:
		err := fmt.Errorf("moat serve exited before it listened: %v%s", p.err, p.out.tail())
		return nil, errors.Join(err, p.stop())
	case <-wait.C:
		err := fmt.Errorf("moat serve did not listen within %v%s", timeout, p.out.tail())
		return nil, errors.Join(err, p.stop())
	case <-ctx.Done():
		return nil, errors.Join(ctx.Err(), p.stop())
	}
}

// stop tells the server to stop (SIGTERM), which kills its sandboxes,
// waits for it, and checks that nothing of its sandboxes is left, sweeping
// what is.
func (p *serveProcess) stop() error {
	p.cmd.Process.Signal(syscall.SIGTERM)
	var errs []error
	select {
	case <-p.exited:
		// Killed by SIGTERM before it could handle it: it had not yet
		// set up its signal handler, and so held no sandbox yet.
		var exit *exec.ExitError
		if p.err != nil && !(errors.As(p.err, &exit) && exit.Sys().(syscall.WaitStatus).Signal() == syscall.SIGTERM) {
			errs = append(errs, fmt.Errorf("moat serve, told to stop: %v%s", p.err, p.out.tail()))
		}
	case <-time.After(serveStop):
		p.cmd.Process.Kill()
		<-p.exited
		errs = append(errs, fmt.Errorf("moat serve did not stop within %v of SIGTERM; killed", serveStop))
	}
	if ids, err := p.root.List(); err == nil && len(ids) > 0 {
		errs = append(errs, fmt.Errorf("moat serve left %d sandboxes behind (%s)", len(ids), strings.Join(ids, ", ")))
	}
	if bundles, _ := os.ReadDir(filepath.Join(p.state, "bundles")); len(bundles) > 0 {
		errs = append(errs, fmt.Errorf("moat serve left %d sandbox bundles behind", len(bundles)))
	}
	return errors.Join(append(errs, p.root.Sweep())...)
}

// serveOutput is a server's stdout and stderr: it says, once, the address
// the server said it listens on, and keeps the end of what it wrote.
type serveOutput struct {
	mu        sync.Mutex
	partial   []byte // the line being written
	last      []string
	listening chan string
	said      bool
}

// serveOutputLines is how many of the server's last lines a failure shows.
const serveOutputLines = 5

func (o *serveOutput) Write(b []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.partial = append(o.partial, b...)
	for {
		i := bytes.IndexByte(o.partial, '\n')
		if i < 0 {
			break
		}
		line := string(o.partial[:i])
		o.partial = o.partial[i+1:]
		if addr, ok := strings.CutPrefix(line, "moat serve: listening on "); ok && !o.said {
			o.said = true
			o.listening <- addr
		}
		o.last = append(o.last, line)
		if len(o.last) > serveOutputLines {
			o.last = o.last[1:]
		}
	}
	return len(b), nil
}

// tail is the end of the server's output, to say why it failed.
func (o *serveOutput) tail() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	if len(o.last) == 0 {
		return ""
	}
	return ": " + strings.Join(o.last, " | ")
}
