package control

// Network is the network namespace a sandbox joins (a linux.namespaces
// entry of type network with a path: the pod or container network that
// podman, CNI or Kubernetes made). The CLI, which may enter the
// namespace, reads its interfaces, addresses and routes and opens a
// packet socket on each interface; the sentry never opens a host socket
// or enters a namespace itself. The sentry's netstack takes the
// addresses and routes, and moves each interface's frames through its
// packet socket.
type Network struct {
	// Path is the namespace the interfaces are in, for messages.
	Path  string  `json:"path"`
	Links []Link  `json:"links"`
	Route []Route `json:"routes,omitempty"`
}

// Link is one interface of the namespace (loopback aside), whose packet
// socket is the sentry's fd NetFD(binds, i) for the i-th link.
type Link struct {
	Name  string   `json:"name"`
	MAC   string   `json:"mac"` // aa:bb:cc:dd:ee:ff
	MTU   uint32   `json:"mtu"`
	Addrs []string `json:"addrs"` // CIDR: 10.88.0.2/16, fe80::1/64
}

// Route is a route of the namespace's main table.
type Route struct {
	Dest    string `json:"dest"`              // CIDR; 0.0.0.0/0 or ::/0 for the default route
	Gateway string `json:"gateway,omitempty"` // empty for a route on the link
	Link    string `json:"link"`              // the interface's name
}

// NetFD is the sentry's fd of the packet socket of the i-th link of
// Setup.Network: after the bind mounts' gofer sockets.
func NetFD(binds, i int) int { return BootBindFD0 + binds + i }
