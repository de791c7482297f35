package kvm

import (
	"encoding/binary"
	"testing"
)

// descriptorBase reassembles a segment descriptor's base and limit.
func descriptorBase(lo, hi uint64) (base uint64, limit uint64) {
	base = lo>>16&0xffffff | (lo>>56&0xff)<<24 | hi<<32
	limit = lo&0xffff | (lo>>48&0xf)<<16
	return base, limit
}

func TestTSSDescriptorNamesTheTSSAndItsSize(t *testing.T) {
	base := uint64(vcpuAreaVA + 5*pageSize + vcpuTSSOff)
	lo, hi := tssDescriptor(base)
	gotBase, limit := descriptorBase(lo, hi)
	if gotBase != base || limit != tssSize-1 {
		t.Fatalf("descriptor names base %#x limit %#x, want %#x and %#x", gotBase, limit, base, tssSize-1)
	}
	if typ := lo >> 40 & 0xff; typ != 0x89 {
		t.Fatalf("access byte %#x, want a present available 64-bit TSS (0x89)", typ)
	}
}

func TestGDTSegmentsHaveTheirSelectorsPrivilege(t *testing.T) {
	b := make([]byte, gdtLimit+1)
	writeGDT(b, 0)
	for _, c := range []struct {
		sel        uint16
		dpl        uint64
		code, long bool
	}{
		{kernelCS, 0, true, true}, {kernelDS, 0, false, false},
		{userCS, 3, true, true}, {userDS, 3, false, false}, {user32CS, 3, true, false},
	} {
		d := binary.LittleEndian.Uint64(b[c.sel&^3:])
		access := d >> 40 & 0xff
		if access&0x80 == 0 {
			t.Errorf("selector %#x: not present", c.sel)
		}
		if dpl := access >> 5 & 3; dpl != c.dpl {
			t.Errorf("selector %#x: DPL %d, want %d", c.sel, dpl, c.dpl)
		}
		if code := access&0x8 != 0; code != c.code {
			t.Errorf("selector %#x: code %v, want %v", c.sel, code, c.code)
		}
		if long := d>>53&1 != 0; long != c.long {
			t.Errorf("selector %#x: 64-bit %v, want %v", c.sel, long, c.long)
		}
		// The kvm_segment the sentry loads must say what the GDT says.
		s := segment(c.sel, c.code)
		if uint64(s.DPL) != c.dpl || (s.L == 1) != (c.code && c.long) && c.sel != user32CS {
			t.Errorf("selector %#x: kvm_segment %+v disagrees with the GDT", c.sel, s)
		}
	}
}

func TestIDTGatesReachEachVectorsHandler(t *testing.T) {
	b := make([]byte, 16*numVectors)
	const vectors = stubCodeVA + 0x40
	writeIDT(b, vectors)
	for v := 0; v < numVectors; v++ {
		lo := binary.LittleEndian.Uint64(b[16*v:])
		hi := binary.LittleEndian.Uint64(b[16*v+8:])
		handler := lo&0xffff | (lo>>48&0xffff)<<16 | hi<<32
		if want := vectors + uint64(v*vectorStride); handler != want {
			t.Errorf("vector %d goes to %#x, want %#x", v, handler, want)
		}
		if sel := lo >> 16 & 0xffff; sel != kernelCS {
			t.Errorf("vector %d: selector %#x, want the kernel's", v, sel)
		}
		attr := lo >> 40 & 0xff
		wantDPL := uint64(0)
		if v == 3 || v == 4 {
			wantDPL = 3
		}
		if attr&0x8f != 0x8e || attr>>5&3 != wantDPL {
			t.Errorf("vector %d: attributes %#x, want a present interrupt gate of DPL %d", v, attr, wantDPL)
		}
	}
}

func TestTSSHasRSP0AndNoIOPorts(t *testing.T) {
	b := make([]byte, tssSize)
	writeTSS(b, 0xffffff8000201000)
	if rsp0 := binary.LittleEndian.Uint64(b[4:]); rsp0 != 0xffffff8000201000 {
		t.Errorf("RSP0 %#x", rsp0)
	}
	if base := binary.LittleEndian.Uint16(b[102:]); base < tssSize {
		t.Errorf("I/O map base %d is inside the TSS: user mode could reach ports", base)
	}
}
