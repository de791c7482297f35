package procfs

import (
	"fmt"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/sentry/net/netstack"
	"github.com/moat-sandbox/moat/sentry/net/unixsock"
)

// netDir is /proc/net: the sandbox's sockets and interfaces, from its
// netstack and its AF_UNIX namespace.
func (f *fs) netDir() *node {
	file := func(name string, content func(st *netstack.Stack) string) child {
		n := f.file("net/"+name, func() ([]byte, error) {
			st, err := netstack.Of(f.k)
			if err != nil {
				return nil, err
			}
			return []byte(content(st)), nil
		})
		n.noWrite = unix.EIO
		return child{name, n}
	}
	cs := []child{
		file("tcp", func(st *netstack.Stack) string { return st.ProcNet(unix.IPPROTO_TCP, false) }),
		file("tcp6", func(st *netstack.Stack) string { return st.ProcNet(unix.IPPROTO_TCP, true) }),
		file("udp", func(st *netstack.Stack) string { return st.ProcNet(unix.IPPROTO_UDP, false) }),
		file("udp6", func(st *netstack.Stack) string { return st.ProcNet(unix.IPPROTO_UDP, true) }),
		file("dev", (*netstack.Stack).ProcNetDev),
		file("route", (*netstack.Stack).ProcNetRoute),
		file("if_inet6", (*netstack.Stack).ProcNetIfInet6),
		file("unix", func(*netstack.Stack) string { return unixsock.ProcNetUnix(f.k) }),
	}
	return f.dir("net", false, func() []child { return cs })
}

// sysNetDir is /proc/sys/net: the values Linux's defaults give a new
// network namespace, and the net.* sysctls the config set.
func (f *fs) sysNetDir() child {
	value := func(path, def string) child {
		name := path[strings.LastIndexByte(path, '/')+1:]
		sysctl := "net." + strings.ReplaceAll(path, "/", ".")
		return child{name, f.file("sys/net/"+path, func() ([]byte, error) {
			v := def
			if st, err := netstack.Of(f.k); err == nil {
				if set, ok := st.Sysctl(sysctl); ok {
					v = strings.Join(strings.Fields(set), "\t")
				}
			}
			return []byte(v + "\n"), nil
		})}
	}
	dir := func(path string, cs ...child) child {
		name := path[strings.LastIndexByte(path, '/')+1:]
		return child{name, f.dir("sys/net/"+path, false, func() []child { return cs })}
	}
	triple := func(v [3]int) string { return fmt.Sprintf("%d\t%d\t%d", v[0], v[1], v[2]) }
	tcpWmem, tcpRmem := triple(netstack.TCPWmem), triple(netstack.TCPRmem)
	return child{"net", f.dir("sys/net", false, func() []child {
		return []child{
			dir("core", value("core/somaxconn", "4096"), value("core/rmem_default", "212992"),
				value("core/wmem_default", "212992"), value("core/rmem_max", "212992"), value("core/wmem_max", "212992"),
				value("core/optmem_max", "20480"), value("core/netdev_max_backlog", "1000")),
			dir("ipv4", value("ipv4/ip_local_port_range", "32768\t60999"), value("ipv4/ip_default_ttl", "64"),
				value("ipv4/ip_forward", "0"), value("ipv4/ping_group_range", "1\t0"),
				value("ipv4/tcp_fin_timeout", "60"), value("ipv4/tcp_keepalive_time", "7200"),
				value("ipv4/tcp_keepalive_intvl", "75"), value("ipv4/tcp_keepalive_probes", "9"),
				value("ipv4/tcp_rmem", tcpRmem), value("ipv4/tcp_wmem", tcpWmem), value("ipv4/tcp_sack", "1"),
				value("ipv4/tcp_timestamps", "1"), value("ipv4/tcp_window_scaling", "1"),
				value("ipv4/tcp_syncookies", "1"), value("ipv4/tcp_max_syn_backlog", "128"),
				value("ipv4/tcp_congestion_control", "reno"), value("ipv4/tcp_available_congestion_control", "reno cubic")),
			dir("ipv6", value("ipv6/bindv6only", "0"),
				dir("ipv6/conf", dir("ipv6/conf/all", value("ipv6/conf/all/disable_ipv6", "0")),
					dir("ipv6/conf/default", value("ipv6/conf/default/disable_ipv6", "0")),
					dir("ipv6/conf/lo", value("ipv6/conf/lo/disable_ipv6", "0")))),
			dir("unix", value("unix/max_dgram_qlen", "10")),
		}
	})}
}
