package kvm

import (
	"encoding/binary"
	"fmt"
)

// stubEntries are the offsets in stubCode of the vector handlers (one
// every vectorStride bytes) and of the syscall entry.
type stubEntries struct {
	vectors, syscall uint64
}

const stubMagic = 0x6d6f6174 // "moat"

func readStubEntries() (stubEntries, error) {
	le := binary.LittleEndian
	if len(stubCode) < 16 || le.Uint32(stubCode[12:]) != stubMagic || le.Uint32(stubCode[8:]) != vectorStride {
		return stubEntries{}, fmt.Errorf("kvm: stub code is malformed")
	}
	return stubEntries{vectors: uint64(le.Uint32(stubCode[0:])), syscall: uint64(le.Uint32(stubCode[4:]))}, nil
}
