package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/moat-sandbox/moat/internal/bundle"
	"github.com/moat-sandbox/moat/internal/e2b"
)

var serveCommand = &command{
	name:    "serve",
	maxArgs: 0,
	summary: "serve E2B's sandbox API, so that E2B's SDKs run on moat sandboxes",
	detail: `
A long-running server that speaks E2B's control-plane API (create, list and
kill sandboxes, their timeouts) and the API of envd, the daemon E2B runs in
each sandbox, which moat answers from outside the sandbox. Point an E2B SDK
at it with E2B_API_URL=http://ADDR, E2B_SANDBOX_URL=http://ADDR and
E2B_API_KEY=KEY (https:// with --tls-cert and --tls-key; see docs/e2b.md). Each sandbox is a moat container made from
a template's root file system, written to through an overlay kept in the
sandbox. SIGINT or SIGTERM kill every sandbox and end the server; a server
that died leaves sandboxes that the next one at the same --state removes.`,
	setup: func(o *options) func(*globalOptions, []string) error {
		var so serveOptions
		o.String(&so.listen, "listen", "ADDR", "127.0.0.1:3000", "address to listen on (host:port)")
		o.String(&so.tlsCert, "tls-cert", "FILE", "", "serve HTTPS with this certificate (PEM, with its chain); needs --tls-key")
		o.String(&so.tlsKey, "tls-key", "FILE", "", "the private key of --tls-cert (PEM)")
		o.String(&so.apiKey, "api-key", "KEY", "", "the API key clients must send (X-API-Key); default $MOAT_API_KEY")
		o.String(&so.state, "state", "DIR", "/run/moat-serve", "directory for the sandboxes' state")
		o.Strings(&so.templates, "template", "NAME=ROOTFS", "a template: sandboxes of NAME run on the directory ROOTFS (at least base)")
		o.Strings(&so.images, "image", "NAME=IMAGE", "a template from podman's image store: sandboxes of NAME run on IMAGE's root file system, mounted with podman image mount while the server runs; its config's Env is the base of every process's environment")
		o.String(&so.domain, "domain", "DOMAIN", "", "also route requests for Host <port>-<sandbox>.DOMAIN to that port of the sandbox")
		o.Int(&so.cpus, "cpus", "N", e2b.DefaultLimits.CPUs, "every sandbox's CPU limit, in CPUs (its cpuCount)")
		o.String(&so.memory, "memory", "BYTES", fmt.Sprintf("%dm", e2b.DefaultLimits.MemoryMB), "every sandbox's memory limit, with a k, m or g suffix (its memoryMB)")
		o.Int(&so.pids, "pids", "N", int(e2b.DefaultLimits.PIDs), "every sandbox's limit of processes and threads")
		o.Int(&so.pool, "pool", "N", 0, "keep up to N sandboxes of each template booted ahead, handed over at create (as many as the busiest second of the last minute asked for, at least 1)")
		return func(g *globalOptions, _ []string) error { return serve(g, so) }
	},
}

// serveTLS is the server's TLS configuration for --tls-cert and
// --tls-key, nil for plain HTTP.
func serveTLS(cert, key string) (*tls.Config, error) {
	switch {
	case cert == "" && key == "":
		return nil, nil
	case cert == "":
		return nil, errors.New("--tls-key: needs --tls-cert")
	case key == "":
		return nil, errors.New("--tls-cert: needs --tls-key")
	}
	pair, err := tls.LoadX509KeyPair(cert, key)
	if err != nil {
		return nil, fmt.Errorf("--tls-cert %s, --tls-key %s: %w", cert, key, err)
	}
	return &tls.Config{Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12}, nil
}

type serveOptions struct {
	listen, apiKey, state, domain string
	tlsCert, tlsKey               string
	templates, images             []string
	pool, cpus, pids              int
	memory                        string
}

// limits are the sandboxes' limits the flags give.
func (so serveOptions) limits() (e2b.Limits, error) {
	memory, err := parseBytes(so.memory)
	if err != nil {
		return e2b.Limits{}, fmt.Errorf("--memory %v", err)
	}
	// e2b.New refuses limits that are no limits, naming the flag's field.
	return e2b.Limits{CPUs: so.cpus, MemoryMB: memory >> 20, PIDs: int64(so.pids)}, nil
}

func serve(g *globalOptions, so serveOptions) error {
	key := so.apiKey
	if key == "" {
		key = os.Getenv("MOAT_API_KEY")
	}
	if key == "" {
		return errors.New("no API key: give --api-key or set MOAT_API_KEY")
	}
	if so.pool < 0 {
		return fmt.Errorf("--pool %d: not a count", so.pool)
	}
	tlsConfig, err := serveTLS(so.tlsCert, so.tlsKey)
	if err != nil {
		return err
	}
	limits, err := so.limits()
	if err != nil {
		return err
	}
	// From the start: a SIGTERM while images are mounted (or sandboxes
	// booted for the pools) ends the server through its clean-up.
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGINT, syscall.SIGTERM)
	defer signal.Stop(stop)
	templates := map[string]string{}
	for _, t := range so.templates {
		name, dir, ok := strings.Cut(t, "=")
		if !ok || name == "" || dir == "" {
			return fmt.Errorf("--template %q: want NAME=ROOTFS", t)
		}
		if _, dup := templates[name]; dup {
			return fmt.Errorf("--template %s: the template is named twice", name)
		}
		abs, err := filepath.Abs(dir)
		if err != nil {
			return fmt.Errorf("--template %s: %w", name, err)
		}
		templates[name] = abs
	}
	var images imageTemplates
	defer images.release()
	imageEnv := map[string][]string{}
	for _, t := range so.images {
		name, ref, ok := strings.Cut(t, "=")
		if !ok || name == "" || ref == "" {
			return fmt.Errorf("--image %q: want NAME=IMAGE", t)
		}
		if _, dup := templates[name]; dup {
			return fmt.Errorf("--image %s: the template is named twice", name)
		}
		dir, err := images.mount(ref)
		if err != nil {
			return fmt.Errorf("--image %s: %w", name, err)
		}
		env, err := images.env(ref)
		if err != nil {
			return fmt.Errorf("--image %s: %w", name, err)
		}
		templates[name], imageEnv[name] = dir, env
		fmt.Fprintf(os.Stderr, "moat serve: template %s: image %s, %d environment variables from its config\n", name, ref, len(env))
	}
	if len(templates) == 0 {
		return errors.New("no template: give --template base=ROOTFS or --image base=IMAGE")
	}
	state, err := filepath.Abs(so.state)
	if err != nil {
		return err
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	srv, err := e2b.New(e2b.Config{
		APIKey: key, StateDir: state, Templates: templates, TemplateEnv: imageEnv, Moat: self, Domain: so.domain, Pool: so.pool, Limits: limits,
		// The templates' trees are shared by every sandbox: writes stay in
		// each sandbox's overlay whatever the caller's --rootfs-writes.
		Flags: []string{"--platform", g.platform, "--rootfs-writes", bundle.WritesOverlay},
		Log: func(format string, args ...any) {
			fmt.Fprintf(os.Stderr, "moat serve: %s\n", fmt.Sprintf(format, args...))
		},
	})
	if err != nil {
		return err
	}
	defer srv.Close()
	l, err := net.Listen("tcp", so.listen)
	if err != nil {
		return err
	}
	hs := &http.Server{Handler: srv.Handler(), ReadHeaderTimeout: 30 * time.Second, TLSConfig: tlsConfig,
		ErrorLog: log.New(os.Stderr, "moat serve: ", 0)}
	served := make(chan error, 1)
	go func() {
		if tlsConfig != nil {
			served <- hs.ServeTLS(l, "", "")
			return
		}
		served <- hs.Serve(l)
	}()
	if tlsConfig != nil {
		fmt.Fprintf(os.Stderr, "moat serve: HTTPS with the certificate %s\n", so.tlsCert)
	}
	fmt.Fprintf(os.Stderr, "moat serve: listening on %s\n", l.Addr())
	select {
	case err := <-served:
		return err
	case <-stop:
	}
	// Streams (a command's output) stay open as long as their command
	// runs: they are cut once the grace has passed, after which Close
	// kills the sandboxes.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	hs.Shutdown(ctx)
	hs.Close()
	return nil
}
