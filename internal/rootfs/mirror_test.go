package rootfs

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestAptMirror(t *testing.T) {
	for _, tc := range []struct {
		name  string
		files map[string]string // under /etc/apt
		want  string            // "" means an error
	}{
		{"one-line", map[string]string{
			"sources.list": "# deb http://old.example/debian bookworm main\n" +
				"deb-src http://src.example/debian bookworm main\n" +
				"deb http://security.example/debian-security bookworm-security main\n" +
				"deb [arch=amd64 signed-by=/k.gpg] http://deb.example/debian/ bookworm main # the mirror\n",
		}, "http://deb.example/debian"},
		{"tabs", map[string]string{"sources.list": "deb\thttp://deb.example/debian\tbookworm\tmain\n"}, "http://deb.example/debian"},
		{"deb822", map[string]string{
			"sources.list.d/debian.sources": "Types: deb\n# comment\nURIs: http://deb.example/debian\n" +
				"Suites: bookworm bookworm-updates\nComponents: main\n\n" +
				"Types: deb\nURIs: http://deb.example/debian-security\nSuites: bookworm-security\n",
		}, "http://deb.example/debian"},
		{"deb822 continuation and disabled", map[string]string{
			"sources.list.d/a.sources": "Enabled: no\nTypes: deb\nURIs: http://off.example/debian\nSuites: bookworm\n\n" +
				"Types: deb-src\n deb\nURIs: https://on.example/debian\nSuites: bookworm\n",
		}, "https://on.example/debian"},
		{"sources.list first, then parts in order", map[string]string{
			"sources.list":           "deb http://first.example/debian bookworm main\n",
			"sources.list.d/a.list":  "deb http://second.example/debian bookworm main\n",
			"sources.list.d/0.list~": "deb http://ignored.example/debian bookworm main\n",
		}, "http://first.example/debian"},
		{"apt's extensions only", map[string]string{
			"sources.list.d/x.list.disabled": "deb http://ignored.example/debian bookworm main\n",
			"sources.list.d/y.list":          "deb http://used.example/debian bookworm main\n",
		}, "http://used.example/debian"},
		{"not over http", map[string]string{"sources.list": "deb cdrom:[Debian]/ bookworm main\n"}, ""},
		{"other suite only", map[string]string{"sources.list": "deb http://deb.example/debian trixie main\n"}, ""},
		{"nothing", map[string]string{}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			must(t, os.Mkdir(filepath.Join(dir, "sources.list.d"), 0o755))
			for name, text := range tc.files {
				must(t, os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644))
			}
			got, err := aptMirrorIn(dir, "bookworm")
			switch {
			case tc.want == "" && err == nil:
				t.Fatalf("got %q, want an error", got)
			case tc.want == "" && !strings.Contains(err.Error(), "no apt source of bookworm"):
				t.Fatalf("error %q does not say what is missing", err)
			case tc.want != "" && (err != nil || got != tc.want):
				t.Fatalf("got %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestProbeMirror: only a mirror that does not answer means "no network";
// one that answers with an error is a misconfiguration, not a reason to skip.
func TestProbeMirror(t *testing.T) {
	ctx := context.Background()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/debian/dists/bookworm/Release" {
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	if err := probeMirror(ctx, srv.URL+"/debian", "bookworm"); err != nil {
		t.Errorf("a mirror that serves the Release file: %v", err)
	}
	err := probeMirror(ctx, srv.URL+"/elsewhere", "bookworm")
	if err == nil || errors.Is(err, ErrMirrorUnreachable) || !strings.Contains(err.Error(), "404") {
		t.Errorf("a mirror answering 404: %v, want a 404 error that is not ErrMirrorUnreachable", err)
	}
	addr := srv.URL
	srv.Close()
	if err := probeMirror(ctx, addr+"/debian", "bookworm"); !errors.Is(err, ErrMirrorUnreachable) {
		t.Errorf("a mirror that is gone: %v, want ErrMirrorUnreachable", err)
	}
}
