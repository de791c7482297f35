package netstack

import (
	"golang.org/x/sys/unix"
	"gvisor.dev/gvisor/pkg/tcpip"
)

// Error is the errno Linux gives for what netstack reports as err.
func Error(err tcpip.Error) error {
	if err == nil {
		return nil
	}
	switch err.(type) {
	case *tcpip.ErrWouldBlock:
		return unix.EAGAIN
	case *tcpip.ErrConnectStarted:
		return unix.EINPROGRESS
	case *tcpip.ErrConnectionRefused:
		return unix.ECONNREFUSED
	case *tcpip.ErrConnectionReset:
		return unix.ECONNRESET
	case *tcpip.ErrConnectionAborted:
		return unix.ECONNABORTED
	case *tcpip.ErrPortInUse, *tcpip.ErrDuplicateAddress:
		return unix.EADDRINUSE
	case *tcpip.ErrBadLocalAddress:
		return unix.EADDRNOTAVAIL
	case *tcpip.ErrHostUnreachable:
		return unix.EHOSTUNREACH
	case *tcpip.ErrNetworkUnreachable:
		return unix.ENETUNREACH
	case *tcpip.ErrHostDown:
		return unix.EHOSTDOWN
	case *tcpip.ErrAlreadyBound, *tcpip.ErrInvalidEndpointState, *tcpip.ErrInvalidOptionValue,
		*tcpip.ErrInvalidPortRange, *tcpip.ErrMalformedHeader, *tcpip.ErrMissingRequiredFields,
		*tcpip.ErrMulticastInputCannotBeOutput, *tcpip.ErrUnknownProtocol:
		return unix.EINVAL
	case *tcpip.ErrAlreadyConnecting:
		return unix.EALREADY
	case *tcpip.ErrAlreadyConnected:
		return unix.EISCONN
	case *tcpip.ErrNotConnected:
		return unix.ENOTCONN
	case *tcpip.ErrClosedForSend, *tcpip.ErrAborted:
		return unix.EPIPE
	case *tcpip.ErrTimeout:
		return unix.ETIMEDOUT
	case *tcpip.ErrMessageTooLong:
		return unix.EMSGSIZE
	case *tcpip.ErrNoBufferSpace:
		return unix.ENOBUFS
	case *tcpip.ErrUnknownProtocolOption:
		return unix.ENOPROTOOPT
	case *tcpip.ErrNotSupported:
		return unix.EOPNOTSUPP
	case *tcpip.ErrQueueSizeNotSupported:
		return unix.ENOTTY
	case *tcpip.ErrDestinationRequired:
		return unix.EDESTADDRREQ
	case *tcpip.ErrBroadcastDisabled:
		return unix.EACCES
	case *tcpip.ErrAddressFamilyNotSupported:
		return unix.EAFNOSUPPORT
	case *tcpip.ErrBadAddress, *tcpip.ErrBadBuffer:
		return unix.EFAULT
	case *tcpip.ErrNotPermitted:
		return unix.EPERM
	case *tcpip.ErrUnknownDevice, *tcpip.ErrUnknownNICID:
		return unix.ENODEV
	case *tcpip.ErrClosedForReceive:
		return nil
	}
	return unix.EINVAL
}
