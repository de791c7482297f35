package kvm

// hostTSC reads the TSC: the vDSO computes the guest's clocks from it, so
// the guest must read the same counter.
func hostTSC() uint64
