package main

import (
	"testing"

	specs "github.com/opencontainers/runtime-spec/specs-go"
)

func netnsSpec(path string) *specs.Spec {
	return &specs.Spec{Linux: &specs.Linux{Namespaces: []specs.LinuxNamespace{
		{Type: specs.PIDNamespace}, {Type: specs.NetworkNamespace, Path: path}}}}
}

func TestOpenNetworkRefusesAPathThatIsNoNetworkNamespace(t *testing.T) {
	for _, c := range []struct{ path, want string }{
		{"/no/such/netns", "network namespace /no/such/netns: no such file or directory"},
		{"/proc/self/ns/uts", "network namespace /proc/self/ns/uts: not a network namespace"},
		{"/dev/null", "network namespace /dev/null: not a network namespace"},
	} {
		n, files, err := openNetwork(netnsSpec(c.path))
		if err == nil || err.Error() != c.want || n != nil || files != nil {
			t.Errorf("%s: %v, %v, %v; want the error %q and nothing open", c.path, n, files, err, c.want)
		}
	}
}

func TestOpenNetworkWithoutAPathIsLoopbackOnly(t *testing.T) {
	spec := netnsSpec("")
	if n, files, err := openNetwork(spec); n != nil || files != nil || err != nil {
		t.Errorf("a new namespace: %v, %v, %v; want no network to join", n, files, err)
	}
	if got := netnsPath(netnsSpec("/run/netns/x")); got != "/run/netns/x" {
		t.Errorf("netnsPath: %q, want the config's /run/netns/x", got)
	}
}
