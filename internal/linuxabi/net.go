package linuxabi

// Socket constants golang.org/x/sys/unix lacks: include/linux/net.h,
// include/linux/socket.h and include/net/scm.h.
const (
	// SOCK_TYPE_MASK keeps a socket type from socket(2)'s flags.
	SOCK_TYPE_MASK = 0xf
	// SOCK_MAX bounds the socket types (enum sock_type).
	SOCK_MAX = 11
	// NPROTO bounds the address families (AF_MAX).
	NPROTO = 46
	// SizeofSockaddrStorage is sizeof(struct sockaddr_storage), the most
	// of an address the socket calls copy in.
	SizeofSockaddrStorage = 128
	// OptmemMax is net.core.optmem_max, the most control data one
	// sendmsg passes (ENOBUFS past it).
	OptmemMax = 20480
)
