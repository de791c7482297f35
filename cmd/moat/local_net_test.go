package main

import (
	"errors"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/moat-sandbox/moat/internal/usernet"
)

func TestLocalSpecNetAllowAsksForTheUserSpaceNetworkAndItsResolvConf(t *testing.T) {
	h := testHost(t)
	h.resolvConf = filepath.Join(h.private, "resolv.conf")
	spec, _, err := localSpec(localPolicy{NetAllow: []string{"pypi.org", "*.github.com:443"}}, h, []string{"true"}, false)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := spec.Annotations[netAllowAnnotation], "pypi.org,*.github.com:443"; got != want {
		t.Errorf("allowlist %q, want %q: the entries (moat create adds the resolver)", got, want)
	}
	if got := spec.Annotations[usernet.Annotation]; got != usernet.AnnotationUser {
		t.Errorf("%s = %q, want %q", usernet.Annotation, got, usernet.AnnotationUser)
	}
	m, ok := mountAtDest(spec, "/etc/resolv.conf")
	if !ok || m.Source != h.resolvConf || !slices.Contains(m.Options, "ro") {
		t.Errorf("/etc/resolv.conf mount = %+v, %v; want the run's own, read-only", m, ok)
	}
	if usernet.ResolvConf != "nameserver 10.0.2.3\n" {
		t.Errorf("the sandbox's resolv.conf is %q, want the user-space resolver", usernet.ResolvConf)
	}
}

func TestLocalSpecNetHasNoAllowlistAndTheUserSpaceResolver(t *testing.T) {
	h := testHost(t)
	h.resolvConf = filepath.Join(h.private, "resolv.conf")
	spec, _, err := localSpec(localPolicy{Net: true}, h, []string{"true"}, false)
	if err != nil {
		t.Fatal(err)
	}
	if v, ok := spec.Annotations[netAllowAnnotation]; ok {
		t.Errorf("--net has an allowlist %q", v)
	}
	if got := spec.Annotations[usernet.Annotation]; got != usernet.AnnotationUser {
		t.Errorf("%s = %q, want %q", usernet.Annotation, got, usernet.AnnotationUser)
	}
	if m, ok := mountAtDest(spec, "/etc/resolv.conf"); !ok || m.Source != h.resolvConf {
		t.Errorf("/etc/resolv.conf mount = %+v, %v; want the run's own", m, ok)
	}
}

func TestLocalSpecWithoutNetLeavesResolvConfAlone(t *testing.T) {
	h := testHost(t)
	spec, _, err := localSpec(localPolicy{}, h, []string{"true"}, false)
	if err != nil {
		t.Fatal(err)
	}
	if m, ok := mountAtDest(spec, "/etc/resolv.conf"); ok {
		t.Errorf("loopback alone, yet /etc/resolv.conf is mounted: %+v", m)
	}
}

func TestLocalSpecMalformedNetAllowEntryNamesTheFlagAndTheEntry(t *testing.T) {
	h := testHost(t)
	for _, entries := range [][]string{{"pypi.org", "bad name!"}, {"pypi.org", ""}, {"pypi.org:99999"}} {
		_, _, err := localSpec(localPolicy{NetAllow: entries}, h, []string{"true"}, false)
		var fe *flagError
		if !errors.As(err, &fe) || fe.flag != "--net-allow" || strings.Contains(err.Error(), "\n") ||
			strings.Contains(err.Error(), netAllowAnnotation) {
			t.Errorf("--net-allow %q: error %v; want one line naming --net-allow (not the annotation)", entries, err)
		}
	}
}

func TestHostResolverIsTheFirstNameserverThatParses(t *testing.T) {
	path := filepath.Join(t.TempDir(), "resolv.conf")
	for _, c := range []struct {
		text string
		want string
	}{
		{"# a comment\nsearch example.com\nnameserver 10.1.2.3\nnameserver 10.9.9.9\n", "10.1.2.3:53"},
		{"nameserver not-an-address\nnameserver fd00::53\n", "[fd00::53]:53"},
		{"nameserver 127.0.0.53\noptions edns0\n", "127.0.0.53:53"},
	} {
		if err := os.WriteFile(path, []byte(c.text), 0o644); err != nil {
			t.Fatal(err)
		}
		got, err := hostResolver(path)
		if err != nil || got != netip.MustParseAddrPort(c.want) {
			t.Errorf("resolv.conf %q: %v, %v; want %s", c.text, got, err, c.want)
		}
	}
	if err := os.WriteFile(path, []byte("search example.com\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := hostResolver(path); err == nil || !strings.Contains(err.Error(), "no nameserver") {
		t.Errorf("resolv.conf with no nameserver: %v, want an error saying so", err)
	}
}

func TestSandboxNetFlagErrorsAreOneLineAndStatus125(t *testing.T) {
	e := newEnv(t)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--net", "--net-allow", "pypi.org"}, "--net: conflicts with --net-allow"},
		{[]string{"--net-allow", "pypi.org,bad name!"}, `--net-allow: "bad name!": not a domain name`},
	} {
		r := e.moat(append(append([]string{"sandbox"}, c.args...), "--", "true")...)
		if r.code != localStatus || strings.Count(strings.TrimSpace(r.stderr), "\n") != 0 || !strings.Contains(r.stderr, c.want) {
			t.Errorf("moat sandbox %q: status %d, stderr %q; want %d and one line with %q", c.args, r.code, r.stderr, localStatus, c.want)
		}
	}
}
