package kvm

import "encoding/binary"

// The FP state a Context presents is Linux's signal frame fpstate: the
// XSAVE area in its standard (uncompacted) layout, as KVM_GET_XSAVE returns
// it, with the FXSAVE area's software-reserved bytes (struct _fpx_sw_bytes)
// describing the extended state: FP_XSTATE_MAGIC1, the frame's size with
// the trailing FP_XSTATE_MAGIC2, the features saved and the XSAVE size.
const (
	swBytesOff   = 464
	fpXstateMag1 = 0x46505853
)

// xstate is a vCPU's FP state as the sentry sees it: a copy of KVM's,
// fetched when the sentry asks for it and loaded back before the vCPU
// next runs if it was handed out (the caller may have changed it).
type xstate struct {
	area     [xsaveAreaSize]byte
	size     int    // the XSAVE size of the enabled features
	features uint64 // XCR0
	fresh    bool   // area holds the vCPU's current state
	dirty    bool   // area must be loaded into the vCPU before it runs
}

// present fills the software bytes and returns the frame's view.
func (x *xstate) present() []byte {
	le := binary.LittleEndian
	sw := x.area[swBytesOff:]
	le.PutUint32(sw[0:], fpXstateMag1)
	le.PutUint32(sw[4:], uint32(x.size)+4)
	le.PutUint64(sw[8:], x.features)
	le.PutUint32(sw[16:], uint32(x.size))
	clear(sw[20:48])
	return x.area[:x.size]
}
