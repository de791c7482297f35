package main

import (
	"strings"
	"testing"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/moat-sandbox/moat/internal/usernet"
	"github.com/moat-sandbox/moat/sentry/net/netstack"
)

func TestConfigWithoutTheAnnotationHasNoUserNetwork(t *testing.T) {
	n, err := userNetworkOf(&specs.Spec{Annotations: map[string]string{netstack.EgressAnnotation: "pypi.org"}})
	if n != nil || err != nil {
		t.Errorf("userNetworkOf = %v, %v; want none: an allowlist alone keeps the config's namespace", n, err)
	}
}

func TestUserNetworkAllowlistReachesTheSentryWithTheResolver(t *testing.T) {
	spec := &specs.Spec{Annotations: map[string]string{usernet.Annotation: usernet.AnnotationUser,
		netstack.EgressAnnotation: "allowed.test,10.1.2.0/24:443"}}
	n, err := userNetworkOf(spec)
	if err != nil {
		t.Skipf("this host has no resolver to relay to: %v", err)
	}
	if n.allow != "allowed.test,10.1.2.0/24:443" {
		t.Errorf("moat usernet's allowlist %q, want the config's", n.allow)
	}
	got := n.sentrySpec(spec).Annotations[netstack.EgressAnnotation]
	if want := "allowed.test,10.1.2.0/24:443,10.0.2.3:53"; got != want {
		t.Errorf("the sentry's allowlist %q, want %q", got, want)
	}
	if spec.Annotations[netstack.EgressAnnotation] != "allowed.test,10.1.2.0/24:443" {
		t.Errorf("the bundle's config was changed: %q", spec.Annotations[netstack.EgressAnnotation])
	}
}

func TestUserNetworkWithoutAllowlistIsAllOfTheNetwork(t *testing.T) {
	spec := &specs.Spec{Annotations: map[string]string{usernet.Annotation: usernet.AnnotationUser}}
	n, err := userNetworkOf(spec)
	if err != nil {
		t.Skipf("this host has no resolver to relay to: %v", err)
	}
	if n.allow != "" || n.sentrySpec(spec) != spec {
		t.Errorf("allowlist %q: want none, and the config as it is for the sentry", n.allow)
	}
}

func TestBadUserNetworkRequestsAreOneLineErrorsNamingTheProblem(t *testing.T) {
	for _, c := range []struct {
		spec *specs.Spec
		want string
	}{
		{&specs.Spec{Annotations: map[string]string{usernet.Annotation: "slirp"}}, `dev.moat.net: "slirp"`},
		{&specs.Spec{Annotations: map[string]string{usernet.Annotation: usernet.AnnotationUser, netstack.EgressAnnotation: "a.test,bad name!"}},
			`dev.moat.net-allow: "bad name!"`},
		{&specs.Spec{Annotations: map[string]string{usernet.Annotation: usernet.AnnotationUser},
			Linux: &specs.Linux{Namespaces: []specs.LinuxNamespace{{Type: specs.NetworkNamespace, Path: "/run/netns/x"}}}},
			"also joins the network namespace /run/netns/x"},
	} {
		_, err := userNetworkOf(c.spec)
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%v: error %v, want one line with %q", c.spec.Annotations, err, c.want)
		}
	}
}
