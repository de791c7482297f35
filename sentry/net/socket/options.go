package socket

import (
	"encoding/binary"
	"math"
	"time"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/sentry/kernel"
)

// Buffer sizes, as Linux's defaults: net.core.{w,r}mem_{default,max}, and
// the floors sock_setsockopt keeps SO_SNDBUF and SO_RCVBUF above
// (SOCK_MIN_SNDBUF and SOCK_MIN_RCVBUF: twice, and once, 2048 bytes and
// an sk_buff's truesize).
const (
	WmemDefault = 212992
	RmemDefault = 212992
	WmemMax     = 212992
	RmemMax     = 212992
	MinSndBuf   = 4608
	MinRcvBuf   = 2304
)

// hz is the clock tick socket timeouts are kept in (Debian's kernels are
// built with CONFIG_HZ=250): SO_RCVTIMEO reads back rounded to it.
const hz = 250

// Timeout is SO_RCVTIMEO or SO_SNDTIMEO in clock ticks; Forever (the
// default, and what a zero timeval sets) never times out, 0 (a negative
// timeval) does not wait at all.
type Timeout int64

// Forever is the timeout that never expires (MAX_SCHEDULE_TIMEOUT).
const Forever Timeout = math.MaxInt64

// ParseTimeval reads a struct timeval as sock_set_timeout does: shorter
// than one is EINVAL, microseconds out of range EDOM.
func ParseTimeval(val []byte) (Timeout, error) {
	if len(val) < 16 {
		return 0, unix.EINVAL
	}
	sec := int64(binary.LittleEndian.Uint64(val))
	usec := int64(binary.LittleEndian.Uint64(val[8:]))
	if usec < 0 || usec >= 1e6 {
		return 0, unix.EDOM
	}
	if sec < 0 {
		return 0, nil
	}
	if sec == 0 && usec == 0 || sec >= int64(Forever)/hz-1 {
		return Forever, nil
	}
	return Timeout(sec*hz + (usec+1e6/hz-1)/(1e6/hz)), nil
}

// Timeval encodes the timeout as getsockopt reports it.
func (to Timeout) Timeval() []byte {
	var sec, usec int64
	if to != Forever {
		sec, usec = int64(to)/hz, int64(to)%hz*1e6/hz
	}
	b := binary.LittleEndian.AppendUint64(nil, uint64(sec))
	return binary.LittleEndian.AppendUint64(b, uint64(usec))
}

// Deadline is when a wait that starts now must end: the zero time for
// Forever.
func (to Timeout) Deadline() time.Time {
	if to == Forever {
		return time.Time{}
	}
	return time.Now().Add(time.Duration(to) * (time.Second / hz))
}

// Wait blocks t until ch is ready or the deadline (zero: none) passes. It
// gives ETIMEDOUT when the time is up, and when a signal comes first
// ERESTARTSYS, or EINTR for a wait with a deadline (sock_intr_errno: a
// socket timeout is never restarted).
func Wait(t *kernel.Task, ch <-chan struct{}, deadline time.Time) error {
	err := t.BlockUntil(ch, deadline)
	if err == kernel.ERESTARTSYS && !deadline.IsZero() {
		return unix.EINTR
	}
	return err
}

// Options are the SOL_SOCKET options a socket only keeps (the family
// answers those that act: SO_TYPE, SO_ERROR, SO_PEERCRED ...). The
// family's lock guards them.
type Options struct {
	flags              map[int]bool
	Linger             unix.Linger
	Priority           int32
	RcvLowat           int32
	Mark               uint32
	SndBuf, RcvBuf     int32
	RcvTimeo, SndTimeo Timeout
	PeekOff            int32
}

// NewOptions returns a socket's options as a new socket has them.
func NewOptions() Options {
	return Options{flags: map[int]bool{}, RcvLowat: 1, SndBuf: WmemDefault, RcvBuf: RmemDefault,
		RcvTimeo: Forever, SndTimeo: Forever, PeekOff: -1}
}

// boolOptions are the flags setsockopt sets and getsockopt reads back as
// 0 or 1.
var boolOptions = map[int]bool{
	unix.SO_DEBUG: true, unix.SO_REUSEADDR: true, unix.SO_REUSEPORT: true, unix.SO_KEEPALIVE: true,
	unix.SO_DONTROUTE: true, unix.SO_BROADCAST: true, unix.SO_OOBINLINE: true, unix.SO_NO_CHECK: true,
	unix.SO_PASSSEC: true, unix.SO_TIMESTAMP: true, unix.SO_TIMESTAMPNS: true, unix.SO_RXQ_OVFL: true,
	unix.SO_WIFI_STATUS: true, unix.SO_NOFCS: true, unix.SO_SELECT_ERR_QUEUE: true,
	unix.SO_BUSY_POLL: false, unix.SO_ZEROCOPY: true, unix.SO_TXREHASH: false,
}

// Flag reports a boolean option's value.
func (o *Options) Flag(name int) bool { return o.flags[name] }

// SetFlag sets a boolean option.
func (o *Options) SetFlag(name int, on bool) { o.flags[name] = on }

// Get answers getsockopt for the options Options keeps; ok is false for
// the others.
func (o *Options) Get(name int) (val []byte, ok bool) {
	if _, isBool := boolOptions[name]; isBool {
		return PutBool(o.flags[name]), true
	}
	switch name {
	case unix.SO_LINGER:
		b := binary.LittleEndian.AppendUint32(nil, uint32(o.Linger.Onoff))
		return binary.LittleEndian.AppendUint32(b, uint32(o.Linger.Linger)), true
	case unix.SO_PRIORITY:
		return PutInt32(o.Priority), true
	case unix.SO_RCVLOWAT:
		return PutInt32(o.RcvLowat), true
	case unix.SO_SNDLOWAT:
		return PutInt32(1), true
	case unix.SO_MARK:
		return PutInt32(int32(o.Mark)), true
	case unix.SO_SNDBUF:
		return PutInt32(o.SndBuf), true
	case unix.SO_RCVBUF:
		return PutInt32(o.RcvBuf), true
	case unix.SO_RCVTIMEO, unix.SO_RCVTIMEO_NEW:
		return o.RcvTimeo.Timeval(), true
	case unix.SO_SNDTIMEO, unix.SO_SNDTIMEO_NEW:
		return o.SndTimeo.Timeval(), true
	case unix.SO_PEEK_OFF:
		return PutInt32(o.PeekOff), true
	case unix.SO_BINDTODEVICE:
		return nil, true
	case unix.SO_INCOMING_CPU:
		return PutInt32(-1), true
	}
	return nil, false
}

// Set answers setsockopt for the options Options keeps, with Linux's
// checks of each value; ok is false for the others.
func (o *Options) Set(t *kernel.Task, name int, val []byte) (ok bool, err error) {
	if _, isBool := boolOptions[name]; isBool {
		on, err := Bool(val)
		if err == nil {
			o.flags[name] = on
		}
		return true, err
	}
	switch name {
	case unix.SO_LINGER:
		if len(val) < unix.SizeofLinger {
			return true, unix.EINVAL
		}
		onoff := int32(binary.LittleEndian.Uint32(val))
		secs := int32(binary.LittleEndian.Uint32(val[4:]))
		if onoff == 0 {
			o.Linger.Onoff = 0
			return true, nil
		}
		o.Linger = unix.Linger{Onoff: 1, Linger: secs}
		return true, nil
	case unix.SO_RCVTIMEO, unix.SO_RCVTIMEO_NEW, unix.SO_SNDTIMEO, unix.SO_SNDTIMEO_NEW:
		to, err := ParseTimeval(val)
		if err != nil {
			return true, err
		}
		if name == unix.SO_RCVTIMEO || name == unix.SO_RCVTIMEO_NEW {
			o.RcvTimeo = to
		} else {
			o.SndTimeo = to
		}
		return true, nil
	case unix.SO_BINDTODEVICE:
		return true, nil
	}
	v, err := Int32(val)
	if err != nil {
		if name == unix.SO_PRIORITY || name == unix.SO_RCVLOWAT || name == unix.SO_SNDLOWAT ||
			name == unix.SO_MARK || name == unix.SO_SNDBUF || name == unix.SO_RCVBUF ||
			name == unix.SO_SNDBUFFORCE || name == unix.SO_RCVBUFFORCE || name == unix.SO_PEEK_OFF {
			return true, err
		}
		return false, nil
	}
	switch name {
	case unix.SO_PRIORITY:
		if (v < 0 || v > 6) && !t.Capable(unix.CAP_NET_ADMIN) {
			return true, unix.EPERM
		}
		o.Priority = v
	case unix.SO_RCVLOWAT:
		if v < 0 {
			v = math.MaxInt32
		}
		o.RcvLowat = max(v, 1)
	case unix.SO_SNDLOWAT:
		return true, unix.ENOPROTOOPT
	case unix.SO_MARK:
		if !t.Capable(unix.CAP_NET_ADMIN) {
			return true, unix.EPERM
		}
		o.Mark = uint32(v)
	case unix.SO_SNDBUF, unix.SO_SNDBUFFORCE:
		n, err := bufferSize(t, name == unix.SO_SNDBUFFORCE, v, WmemMax)
		if err != nil {
			return true, err
		}
		o.SndBuf = max(n*2, MinSndBuf)
	case unix.SO_RCVBUF, unix.SO_RCVBUFFORCE:
		n, err := bufferSize(t, name == unix.SO_RCVBUFFORCE, v, RmemMax)
		if err != nil {
			return true, err
		}
		o.RcvBuf = max(n*2, MinRcvBuf)
	case unix.SO_PEEK_OFF:
		o.PeekOff = v
	default:
		return false, nil
	}
	return true, nil
}

// bufferSize is the size SO_SNDBUF or SO_RCVBUF asks for, before Linux
// doubles it: capped at the sysctl maximum (the value read as unsigned,
// so a negative one is the maximum), or with the FORCE variant and
// CAP_NET_ADMIN uncapped and at least 0.
func bufferSize(t *kernel.Task, force bool, v, maxSize int32) (int32, error) {
	if force {
		if !t.Capable(unix.CAP_NET_ADMIN) {
			return 0, unix.EPERM
		}
		v = max(v, 0)
	} else if uint32(v) > uint32(maxSize) {
		v = maxSize
	}
	return min(v, math.MaxInt32/2), nil
}
