package boot

import (
	"strings"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/moat-sandbox/moat/sentry/kernel"
	"github.com/moat-sandbox/moat/sentry/net/netstack"
)

// setupNetwork gives the sandbox its network stack: loopback, and the
// net.* sysctls of the config (net.ipv4.ping_group_range says who may
// make ICMP echo sockets, as in a container).
func setupNetwork(k *kernel.Kernel, l *specs.Linux) error {
	st, err := netstack.New()
	if err != nil {
		return err
	}
	if l != nil {
		net := map[string]string{}
		for name, v := range l.Sysctl {
			if strings.HasPrefix(name, "net.") {
				net[name] = v
			}
		}
		st.SetSysctls(net)
	}
	netstack.Install(k, st)
	return nil
}
