package boot

import (
	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// noteNamespaces logs, once each, the config's namespaces that name a
// path to join (the network namespace podman, CNI or a pod sandbox made).
// Every namespace a config asks for is the sandbox's own, made by the
// sentry; a network namespace's interfaces, addresses and routes become
// the sandbox's stack's (network.go), and the other namespaces of the
// host have no meaning for a kernel of the sandbox's own.
func noteNamespaces(l *specs.Linux, log func(string, ...any)) {
	if l == nil {
		return
	}
	for _, ns := range l.Namespaces {
		if ns.Path == "" {
			continue
		}
		if ns.Type == specs.NetworkNamespace {
			log("namespaces: network namespace %s joined: its interfaces are the sandbox's", ns.Path)
		} else {
			log("namespaces: %s namespace %s not joined: the sandbox's kernel has its own", ns.Type, ns.Path)
		}
	}
}

// JoinedNamespaces lists the config's namespaces that name a path, for
// the container's record.
func JoinedNamespaces(l *specs.Linux) []specs.LinuxNamespace {
	if l == nil {
		return nil
	}
	var out []specs.LinuxNamespace
	for _, ns := range l.Namespaces {
		if ns.Path != "" {
			out = append(out, ns)
		}
	}
	return out
}
