package rootfs

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// ErrMirrorUnreachable says that the Debian mirror could not be reached: the
// machine has no network, so no rootfs can be built.
var ErrMirrorUnreachable = errors.New("the Debian mirror cannot be reached")

// aptConfigDir holds the sources apt reads, the one place that says which
// mirror this machine may and does use.
const aptConfigDir = "/etc/apt"

// aptMirror returns the URI of the first enabled apt source of binary
// packages for suite, in the order apt reads them.
func aptMirror(suite string) (string, error) {
	return aptMirrorIn(aptConfigDir, suite)
}

func aptMirrorIn(dir, suite string) (string, error) {
	files := []string{filepath.Join(dir, "sources.list")}
	// apt reads only these two extensions, in lexical order; anything else
	// in the directory (x.list.disabled, backups) is ignored by it.
	parts, err := filepath.Glob(filepath.Join(dir, "sources.list.d", "*"))
	if err != nil {
		return "", err
	}
	slices.Sort(parts)
	for _, p := range parts {
		if strings.HasSuffix(p, ".list") || strings.HasSuffix(p, ".sources") {
			files = append(files, p)
		}
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return "", err
		}
		var sources []source
		if strings.HasSuffix(f, ".sources") {
			sources = parseDeb822(string(data))
		} else {
			sources = parseOneLine(string(data))
		}
		for _, s := range sources {
			// debootstrap and the probe fetch over HTTP; other schemes
			// (cdrom:, mirror+file:) are apt's alone.
			web := strings.HasPrefix(s.uri, "http://") || strings.HasPrefix(s.uri, "https://")
			if s.deb && web && slices.Contains(s.suites, suite) {
				return strings.TrimSuffix(s.uri, "/"), nil
			}
		}
	}
	return "", fmt.Errorf("no apt source of %s packages over http(s) in %s/sources.list{,.d/*.list,.d/*.sources}", suite, dir)
}

// source is one apt source: for binary packages (deb) or not, a URI and its
// suites.
type source struct {
	deb    bool
	uri    string
	suites []string
}

// parseOneLine reads the classic format: `deb [options] uri suite
// [component...]`, one source a line, # starting a comment.
func parseOneLine(text string) []source {
	var sources []source
	sc := bufio.NewScanner(strings.NewReader(text))
	for sc.Scan() {
		line, _, _ := strings.Cut(sc.Text(), "#")
		// The options are the only part in brackets.
		if before, after, ok := strings.Cut(line, "["); ok {
			_, after, _ = strings.Cut(after, "]")
			line = before + " " + after
		}
		f := strings.Fields(line)
		if len(f) < 3 {
			continue
		}
		sources = append(sources, source{deb: f[0] == "deb", uri: f[1], suites: f[2:3]})
	}
	return sources
}

// parseDeb822 reads the deb822 format of *.sources files: paragraphs of
// "Field: value" lines separated by blank lines, a line starting with white
// space continuing the field before it. A paragraph may name several types,
// URIs and suites; the first URI stands for it.
func parseDeb822(text string) []source {
	var sources []source
	fields := map[string]string{}
	var last string
	flush := func() {
		uris := strings.Fields(fields["uris"])
		if len(uris) > 0 && !strings.EqualFold(fields["enabled"], "no") {
			sources = append(sources, source{
				deb:    slices.Contains(strings.Fields(fields["types"]), "deb"),
				uri:    uris[0],
				suites: strings.Fields(fields["suites"]),
			})
		}
		fields, last = map[string]string{}, ""
	}
	sc := bufio.NewScanner(strings.NewReader(text))
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.TrimSpace(line) == "":
			flush()
		case strings.HasPrefix(line, "#"):
		case line[0] == ' ' || line[0] == '\t':
			if last != "" {
				fields[last] += " " + strings.TrimSpace(line)
			}
		default:
			name, value, ok := strings.Cut(line, ":")
			if ok {
				last = strings.ToLower(strings.TrimSpace(name))
				fields[last] = strings.TrimSpace(value)
			}
		}
	}
	flush()
	return sources
}

// probeTimeout bounds the check that the mirror answers. A mirror that
// needs longer than this for one small file would not deliver a system in
// minutes either.
const probeTimeout = 20 * time.Second

// probeMirror fetches suite's Release file, to tell "no network", which
// makes a build impossible, from a build that fails. Only a failure to get
// any answer wraps ErrMirrorUnreachable; a mirror that answers with an error
// is a misconfiguration and is reported as such.
func probeMirror(ctx context.Context, mirror, suite string) error {
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	url := mirror + "/dists/" + suite + "/Release"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrMirrorUnreachable, err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("mirror %s: GET %s: %s", mirror, url, resp.Status)
	}
	return nil
}
