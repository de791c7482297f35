package vdso

// rdtsc reads the time-stamp counter, ordered after earlier loads.
func rdtsc() uint64

// cpuid executes CPUID for leaf and subleaf sub.
func cpuid(leaf, sub uint32) (a, b, c, d uint32)

// callSysV calls the System V ABI function at fn with three integer
// arguments and returns its rax. For tests.
func callSysV(fn, a0, a1, a2 uintptr) uintptr

// invariantTSC reports whether the CPU says its TSC ticks at a constant rate
// in every P-, C- and T-state (CPUID 0x80000007 EDX bit 8).
func invariantTSC() bool {
	if max, _, _, _ := cpuid(0x80000000, 0); max < 0x80000007 {
		return false
	}
	_, _, _, d := cpuid(0x80000007, 0)
	return d&(1<<8) != 0
}
