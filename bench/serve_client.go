package bench

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// e2bClient calls moat serve's control plane as E2B's SDKs do: JSON
// bodies, the API key in X-API-Key, connections kept alive between calls.
type e2bClient struct {
	url, key string
	http     *http.Client
}

// maxIdle is how many connections the client keeps open: one per create
// of the largest burst, so that the timed bursts reuse them all.
const maxIdle = 64

func newE2BClient(url, key string) *e2bClient {
	tr := &http.Transport{MaxIdleConns: maxIdle, MaxIdleConnsPerHost: maxIdle, DisableCompression: true}
	return &e2bClient{url: url, key: key, http: &http.Client{Transport: tr}}
}

func (c *e2bClient) request(ctx context.Context, method, path, body string) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, method, c.url+path, strings.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("X-API-Key", c.key)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	return req, nil
}

// create asks for a sandbox of template, with the body the SDK's
// Sandbox.create sends, and returns its id and how long the call took,
// from the request's start to its response's last byte.
func (c *e2bClient) create(ctx context.Context, template string) (string, time.Duration, error) {
	body := fmt.Sprintf(`{"templateID":%q,"metadata":{"bench":"e2b-create"},"timeout":%d}`, template, sandboxTimeout)
	req, err := c.request(ctx, http.MethodPost, "/v2/sandboxes", body)
	if err != nil {
		return "", 0, err
	}
	start := time.Now()
	resp, err := c.http.Do(req)
	if err != nil {
		return "", 0, err
	}
	data, err := io.ReadAll(resp.Body)
	took := time.Since(start)
	resp.Body.Close()
	if err != nil {
		return "", 0, err
	}
	if resp.StatusCode != http.StatusCreated {
		return "", 0, fmt.Errorf("POST /v2/sandboxes: %s: %s", resp.Status, bytes.TrimSpace(data))
	}
	var sb struct {
		SandboxID string `json:"sandboxID"`
	}
	if err := json.Unmarshal(data, &sb); err != nil || sb.SandboxID == "" {
		return "", 0, fmt.Errorf("POST /v2/sandboxes answered %s without a sandboxID", bytes.TrimSpace(data))
	}
	return sb.SandboxID, took, nil
}

// kill kills sandbox id, as Sandbox.kill does.
func (c *e2bClient) kill(ctx context.Context, id string) error {
	req, err := c.request(ctx, http.MethodDelete, "/sandboxes/"+id, "")
	if err != nil {
		return err
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return err
	}
	data, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		return fmt.Errorf("DELETE /sandboxes/%s: %s: %s", id, resp.Status, bytes.TrimSpace(data))
	}
	return nil
}

// metrics reads the server's GET /metrics: each sample by its name with
// its labels, as the text format spells them.
func (c *e2bClient) metrics(ctx context.Context) (map[string]float64, error) {
	req, err := c.request(ctx, http.MethodGet, "/metrics", "")
	if err != nil {
		return nil, err
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET /metrics: %s", resp.Status)
	}
	m := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			continue
		}
		if v, err := strconv.ParseFloat(line[i+1:], 64); err == nil {
			m[line[:i]] = v
		}
	}
	return m, sc.Err()
}

// createCounts are the server's creates so far, by how each was served.
type createCounts struct{ pool, boot int }

func (c *e2bClient) creates(ctx context.Context) (createCounts, error) {
	m, err := c.metrics(ctx)
	if err != nil {
		return createCounts{}, err
	}
	return createCounts{pool: int(m[`moat_serve_creates_total{outcome="pool"}`]),
		boot: int(m[`moat_serve_creates_total{outcome="boot"}`])}, nil
}

// poolPoll is how often waitPool reads the metrics.
const poolPoll = 10 * time.Millisecond

// waitPool waits until the server's pool of template holds want booted
// sandboxes, for at most timeout.
func (c *e2bClient) waitPool(ctx context.Context, template string, want int, timeout time.Duration) error {
	name := fmt.Sprintf("moat_serve_pool_ready{template=%q}", template)
	deadline := time.Now().Add(timeout)
	for {
		m, err := c.metrics(ctx)
		if err != nil {
			return err
		}
		if int(m[name]) >= want {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the pool held %d of %d sandboxes after %v", int(m[name]), want, timeout)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(poolPoll):
		}
	}
}
