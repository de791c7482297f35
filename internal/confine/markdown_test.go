package confine

import (
	"flag"
	"os"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite docs/security.md's generated tables and capdrop_elf.go")

const securityDoc = "../../docs/security.md"

// generated are docs/security.md's generated sections, by marker.
var generated = map[string]func() string{
	"sentry allowlist":  SentryCalls.Markdown,
	"gofer allowlist":   GoferCalls.With(Poller{}.Calls()).Markdown,
	"kvm additions":     KVMCalls(nil).Markdown,
	"usernet allowlist": UsernetCalls.With(Poller{}.Calls()).Markdown,
}

// TestSecurityDocListsTheAllowlists: docs/security.md's tables are the
// allowlists as built; `go test ./internal/confine -run TestSecurityDoc
// -update` rewrites them.
func TestSecurityDocListsTheAllowlists(t *testing.T) {
	data, err := os.ReadFile(securityDoc)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(data)
	for name, render := range generated {
		begin, end := "<!-- begin "+name+" -->\n", "<!-- end "+name+" -->"
		i, j := strings.Index(doc, begin), strings.Index(doc, end)
		if i < 0 || j < i {
			t.Fatalf("%s has no %q section", securityDoc, name)
		}
		want := render()
		if got := doc[i+len(begin) : j]; got != want {
			if !*update {
				t.Errorf("%s's %s is out of date: run go test ./internal/confine -run TestSecurityDoc -update", securityDoc, name)
				continue
			}
			doc = doc[:i+len(begin)] + want + doc[j:]
		}
	}
	if *update {
		if err := os.WriteFile(securityDoc, []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
