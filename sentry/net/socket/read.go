package socket

import "github.com/moat-sandbox/moat/sentry/vfs"

// ZeroRead says whether a read(2) or readv(2) of a socket asks for no
// bytes at all. Linux answers such a read with 0 at once, in every family
// and whether or not data is queued or the socket blocks (sock_read_iter),
// without taking any data off the queue; recv(2) and recvmsg(2) do not
// share the rule and go to the family.
func ZeroRead(dst *vfs.IOSeq) bool { return dst.Len() == 0 }
